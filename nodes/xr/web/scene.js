// In-VR controls for the teleop page: a panel of buttons drawn in the immersive
// session (WebGL) and pointed at with the controllers' target rays (docs/xr.md,
// "The stop in the operator's hand" and "In-VR controls: the episode buttons").
// This module only draws and hit-tests; app.js decides what a press does.
//
// Frames: poses are in the session's local-floor space (+x right, +y up, -z
// forward, metres). The panel's own frame has +x right, +y up and +z out of its
// face, with the origin at its centre.

import { linkProgram } from '/static/gl_program.js';
import { multiply } from '/static/mat4.js';

export const PANEL_W = 0.82;
export const PANEL_H = 0.26;
const PANEL_DISTANCE_M = 0.75;   // in front of the eyes, along the floor
// above the main camera panel (whose top edge is 24 deg above the eyes): its lower edge
// about 28 deg up, where rays rarely point while working and the camera image stays clear
const PANEL_RISE_M = 0.55;
const FOLLOW_AFTER_RAD = Math.PI / 3;  // the operator turned this far away: bring the panel back in front
const RAY_LENGTH_M = 3.0;
const PX_PER_M = 2000;

// Button rectangles in the panel frame (metres): [left, bottom, right, top]. The stop
// controls take the left part, the episode controls (ep_*) the right, past a divider.
export const BUTTONS = {
  estop: [-0.40, -0.04, -0.23, 0.07],
  pause: [-0.22, -0.04, -0.09, 0.07],
  release: [-0.08, -0.04, 0.04, 0.07],
  confirm: [-0.40, -0.125, -0.23, -0.05],  // far from "release": a repeated click cannot reach it
  recentre: [-0.08, -0.125, 0.04, -0.05],  // the camera panels and this panel in front of the eyes again
  ep_start: [0.08, -0.04, 0.28, 0.07],
  ep_keep: [0.29, -0.04, 0.40, 0.07],
  ep_confirm: [0.08, -0.125, 0.20, -0.05],  // across the panel from "discard", like the release's confirm
  ep_discard: [0.29, -0.125, 0.40, -0.05],
};
const STATUS = [-0.40, 0.08, 0.04, 0.125];
const EP_STATUS = [0.08, 0.08, 0.40, 0.125];
const DIVIDER_U = 0.06;

// ---------------------------------------------------------------- math
// Column-major 4x4 matrices (mat4.js), as WebGL and WebXR use them.
function rotateByQuat(q, v) {
  // v' = v + 2w (u x v) + 2 u x (u x v), u = (q.x, q.y, q.z)
  const [x, y, z] = v;
  const tx = 2 * (q.y * z - q.z * y), ty = 2 * (q.z * x - q.x * z), tz = 2 * (q.x * y - q.y * x);
  return [x + q.w * tx + (q.y * tz - q.z * ty), y + q.w * ty + (q.z * tx - q.x * tz), z + q.w * tz + (q.x * ty - q.y * tx)];
}

// The panel's axes for a yaw about +y (0: its face looks along +z) and a pitch about its own x
// (positive: the face tilts down).
function panelBasis(yaw, pitch) {
  const cy = Math.cos(yaw), sy = Math.sin(yaw), cp = Math.cos(pitch), sp = Math.sin(pitch);
  // R = Ry(yaw) * Rx(pitch); columns are the panel's x, y, z axes in local-floor
  const ex = [cy, 0, -sy];
  const ey = [sy * sp, cp, cy * sp];
  const ez = [sy * cp, -sp, cy * cp];
  return { ex, ey, ez };
}

const dot = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
const sub = (a, b) => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];

// ---------------------------------------------------------------- panel
// the status line's colour per state (hud.js keys): each at least 4.5:1 on the panel's fill
const STATUS_COLOURS = { latched: '#ff8a80', paused: '#ffc14d', live: '#8f8', notPaired: '#90caf9', linkLost: '#e0e0e0',
  unknown: '#e0e0e0' };

export class ControlPanel {
  constructor(gl) {
    this.gl = gl;
    this.center = null;       // [x, y, z] in local-floor; null until placed
    this.yaw = 0;
    this.pitch = 0;
    this.basis = null;
    this.content = null;      // what the texture shows, as a string key
    this.canvas = document.createElement('canvas');
    this.canvas.width = Math.round(PANEL_W * PX_PER_M);
    this.canvas.height = Math.round(PANEL_H * PX_PER_M);
    this._initGL();
  }

  // Puts the panel in front of a viewer pose (XRRigidTransform), upright, tilted to face the eyes.
  place(viewer) {
    const p = viewer.position;
    const fwd = rotateByQuat(viewer.orientation, [0, 0, -1]);
    let h = Math.hypot(fwd[0], fwd[2]);
    const dir = h > 1e-6 ? [fwd[0] / h, 0, fwd[2] / h] : [0, 0, -1];
    this.center = [p.x + dir[0] * PANEL_DISTANCE_M, p.y + PANEL_RISE_M, p.z + dir[2] * PANEL_DISTANCE_M];
    // the panel's +z points back at the eye: yaw from the horizontal direction, pitch down to the eye
    this.yaw = Math.atan2(-dir[0], -dir[2]);
    this.pitch = Math.atan2(PANEL_RISE_M, PANEL_DISTANCE_M);  // face tilted down towards the eyes
    this.basis = panelBasis(this.yaw, this.pitch);
  }

  // Places the panel at the first pose, and again once the viewer has turned far away from it.
  follow(viewer) {
    if (!this.center) { this.place(viewer); return; }
    const p = viewer.position;
    const fwd = rotateByQuat(viewer.orientation, [0, 0, -1]);
    const toPanel = [this.center[0] - p.x, 0, this.center[2] - p.z];
    const a = Math.atan2(fwd[0], -fwd[2]) - Math.atan2(toPanel[0], -toPanel[2]);
    const off = Math.abs(Math.atan2(Math.sin(a), Math.cos(a)));
    if (Math.hypot(fwd[0], fwd[2]) > 0.3 && off > FOLLOW_AFTER_RAD) this.place(viewer);
  }

  // A button's centre in local-floor (for display and tests), or null before placement.
  buttonCenter(name) {
    if (!this.center) return null;
    const [l, b, r, t] = BUTTONS[name];
    return this.toWorld((l + r) / 2, (b + t) / 2);
  }

  toWorld(u, v) {
    const { ex, ey } = this.basis;
    return [0, 1, 2].map((i) => this.center[i] + ex[i] * u + ey[i] * v);
  }

  // Where a target ray (XRRigidTransform) meets the panel's face: {u, v, distance} in
  // panel metres, or null when it points away, hits the back, or misses the panel.
  intersect(ray) {
    if (!this.center) return null;
    const o = [ray.position.x, ray.position.y, ray.position.z];
    const d = rotateByQuat(ray.orientation, [0, 0, -1]);
    const { ex, ey, ez } = this.basis;
    const rel = sub(o, this.center);
    const oz = dot(rel, ez), dz = dot(d, ez);
    if (oz <= 0 || dz >= -1e-9) return null;  // behind the panel, or not pointing at its face
    const s = -oz / dz;
    const u = dot(rel, ex) + s * dot(d, ex), v = dot(rel, ey) + s * dot(d, ey);
    if (Math.abs(u) > PANEL_W / 2 || Math.abs(v) > PANEL_H / 2) return null;
    return { u, v, distance: s };
  }

  // The button a target ray points at, or null.
  hit(ray) {
    const at = this.intersect(ray);
    if (!at) return null;
    for (const [name, [l, b, r, t]] of Object.entries(BUTTONS)) {
      if (at.u >= l && at.u <= r && at.v >= b && at.v <= t) return name;
    }
    return null;
  }

  // ---------------------------------------------------------- drawing
  // model: {status, statusKey (hud.js), estopLatched, paused, releaseArmed, showConfirm, enabled: {name: bool}, hover: Set,
  //         episode: {status, color, task, discardArmed, showConfirm}}
  setContent(model) {
    const key = JSON.stringify({ ...model, hover: [...model.hover].sort() });
    if (key === this.content) return;
    this.content = key;
    const c = this.canvas.getContext('2d');
    const px = (m) => m * PX_PER_M;
    const rect = ([l, b, r, t]) => [px(l + PANEL_W / 2), px(PANEL_H / 2 - t), px(r - l), px(t - b)];
    c.fillStyle = '#1b1b1f';
    c.fillRect(0, 0, this.canvas.width, this.canvas.height);
    c.textAlign = 'center';
    c.textBaseline = 'middle';
    const [sx, sy, sw, sh] = rect(STATUS);
    c.fillStyle = STATUS_COLOURS[model.statusKey] || '#e0e0e0';
    c.font = `bold ${Math.round(sh * 0.55)}px sans-serif`;
    c.fillText(model.status, sx + sw / 2, sy + sh / 2, sw);
    const ep = model.episode;
    const [ex, ey, ew, eh] = rect(EP_STATUS);
    c.fillStyle = ep.color;
    c.fillText(ep.status, ex + ew / 2, ey + eh / 2, ew);
    c.fillStyle = '#55555c';
    c.fillRect(px(DIVIDER_U + PANEL_W / 2) - px(0.002), px(0.01), px(0.004), this.canvas.height - px(0.02));
    const labels = {
      estop: ['E-STOP', model.estopLatched ? '#7f0000' : '#c62828'],
      pause: [model.paused ? 'RESUME' : 'PAUSE', model.paused ? '#2e7d32' : '#8a5200'],
      recentre: ['RECENTRE', '#37474f'],
      release: [model.releaseArmed && !model.enabled.release ? 'ARMED' : 'RELEASE', '#1565c0'],
      confirm: ['CONFIRM', '#1565c0'],
      ep_start: ['START', '#2e7d32'],
      ep_keep: ['KEEP', '#1565c0'],
      ep_discard: [ep.discardArmed && !model.enabled.ep_discard ? 'ARMED' : 'DISCARD', '#8e2424'],
      ep_confirm: ['CONFIRM', '#8e2424'],
    };
    for (const [name, box] of Object.entries(BUTTONS)) {
      if (name === 'confirm' && !model.showConfirm) continue;
      if (name === 'ep_confirm' && !ep.showConfirm) continue;
      const [x, y, w, hgt] = rect(box);
      const on = model.enabled[name];
      c.fillStyle = on ? labels[name][1] : '#3a3a40';
      c.fillRect(x, y, w, hgt);
      if (name === 'estop' && model.estopLatched) {  // latched: a white inner frame, and it says so
        c.lineWidth = px(0.008);
        c.strokeStyle = '#fff';
        c.strokeRect(x + px(0.008), y + px(0.008), w - px(0.016), hgt - px(0.016));
      }
      if (model.hover.has(name) && on) {
        c.lineWidth = px(0.006);
        c.strokeStyle = '#fff';
        c.strokeRect(x + c.lineWidth / 2, y + c.lineWidth / 2, w - c.lineWidth, hgt - c.lineWidth);
      }
      c.fillStyle = on ? '#fff' : '#888';
      c.font = `bold ${Math.round(Math.min(hgt * 0.42, w * 0.22))}px sans-serif`;
      // a second, smaller line: the task an episode would start with, what is confirmed, the arms' state
      const sub = { ep_start: ep.task, ep_confirm: 'discard', estop: model.estopLatched ? 'LATCHED' : '',
        pause: model.paused ? 'arms paused' : 'arms live', recentre: 'the view' }[name] || '';
      c.fillText(labels[name][0], x + w / 2, y + hgt * (sub ? 0.36 : 0.5), w * 0.9);
      if (sub) {
        c.font = `${Math.round(Math.min(hgt * 0.2, w * 0.12))}px sans-serif`;
        c.fillText(sub, x + w / 2, y + hgt * 0.74, w * 0.92);
      }
    }
    const gl = this.gl;
    gl.bindTexture(gl.TEXTURE_2D, this.texture);
    gl.texImage2D(gl.TEXTURE_2D, 0, gl.RGBA, gl.RGBA, gl.UNSIGNED_BYTE, this.canvas);
  }

  _initGL() {
    const gl = this.gl;
    const prog = linkProgram(gl,
      'attribute vec3 pos; attribute vec2 uv; uniform mat4 mvp; varying vec2 vUv;' +
      'void main() { vUv = uv; gl_Position = mvp * vec4(pos, 1.0); }',
      'precision mediump float; varying vec2 vUv; uniform sampler2D tex; uniform vec4 color; uniform float textured;' +
      'void main() { gl_FragColor = textured > 0.5 ? texture2D(tex, vUv) : color; }');
    this.prog = prog;
    this.loc = {
      pos: gl.getAttribLocation(prog, 'pos'), uv: gl.getAttribLocation(prog, 'uv'),
      mvp: gl.getUniformLocation(prog, 'mvp'), color: gl.getUniformLocation(prog, 'color'),
      textured: gl.getUniformLocation(prog, 'textured'), tex: gl.getUniformLocation(prog, 'tex'),
    };
    const w = PANEL_W / 2, h = PANEL_H / 2;
    this.quad = gl.createBuffer();
    gl.bindBuffer(gl.ARRAY_BUFFER, this.quad);
    // x, y, z, u, v (texture v = 0 at the canvas top)
    gl.bufferData(gl.ARRAY_BUFFER, new Float32Array([
      -w, -h, 0, 0, 1, w, -h, 0, 1, 1, -w, h, 0, 0, 0, w, h, 0, 1, 0]), gl.STATIC_DRAW);
    this.lines = gl.createBuffer();
    this.texture = gl.createTexture();
    gl.bindTexture(gl.TEXTURE_2D, this.texture);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MIN_FILTER, gl.LINEAR);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MAG_FILTER, gl.LINEAR);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_WRAP_S, gl.CLAMP_TO_EDGE);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_WRAP_T, gl.CLAMP_TO_EDGE);
  }

  _model() {
    const { ex, ey, ez } = this.basis;
    const c = this.center;
    return new Float32Array([...ex, 0, ...ey, 0, ...ez, 0, c[0], c[1], c[2], 1]);
  }

  // Draws the panel and one line per ray ({transform, color, length: where it hits}) into every
  // view of the layer, depth-tested against what was drawn before in the frame.
  draw(layer, views, rays) {
    const gl = this.gl;
    gl.useProgram(this.prog);
    gl.enable(gl.DEPTH_TEST);  // nearer things hide farther ones, rays included
    gl.depthFunc(gl.LEQUAL);
    gl.disable(gl.CULL_FACE);
    const verts = [];
    for (const r of rays) {
      const o = r.transform.position;
      const d = rotateByQuat(r.transform.orientation, [0, 0, -1]);
      const len = r.length || RAY_LENGTH_M;
      verts.push(o.x, o.y, o.z, 0, 0, o.x + d[0] * len, o.y + d[1] * len, o.z + d[2] * len, 0, 0);
    }
    gl.bindBuffer(gl.ARRAY_BUFFER, this.lines);
    gl.bufferData(gl.ARRAY_BUFFER, new Float32Array(verts), gl.DYNAMIC_DRAW);
    const model = this.center ? this._model() : null;
    for (const view of views) {
      const vp = layer.getViewport(view);
      if (!vp || vp.width === 0) continue;
      gl.viewport(vp.x, vp.y, vp.width, vp.height);
      const viewProj = multiply(view.projectionMatrix, view.transform.inverse.matrix);
      if (model) {
        gl.bindBuffer(gl.ARRAY_BUFFER, this.quad);
        this._attribs(true);
        gl.uniformMatrix4fv(this.loc.mvp, false, multiply(viewProj, model));
        gl.uniform1f(this.loc.textured, 1);
        gl.activeTexture(gl.TEXTURE0);
        gl.bindTexture(gl.TEXTURE_2D, this.texture);
        gl.uniform1i(this.loc.tex, 0);
        gl.drawArrays(gl.TRIANGLE_STRIP, 0, 4);
      }
      gl.bindBuffer(gl.ARRAY_BUFFER, this.lines);
      this._attribs(false);
      gl.uniformMatrix4fv(this.loc.mvp, false, viewProj);
      gl.uniform1f(this.loc.textured, 0);
      rays.forEach((r, i) => {
        gl.uniform4fv(this.loc.color, r.color);
        gl.drawArrays(gl.LINES, 2 * i, 2);
      });
    }
  }

  _attribs(textured) {
    const gl = this.gl;
    gl.enableVertexAttribArray(this.loc.pos);
    gl.vertexAttribPointer(this.loc.pos, 3, gl.FLOAT, false, 20, 0);
    if (textured) {
      gl.enableVertexAttribArray(this.loc.uv);
      gl.vertexAttribPointer(this.loc.uv, 2, gl.FLOAT, false, 20, 12);
    } else {
      gl.disableVertexAttribArray(this.loc.uv);
      gl.vertexAttrib2f(this.loc.uv, 0, 0);
    }
  }
}
