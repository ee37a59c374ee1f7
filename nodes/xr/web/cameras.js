// The robot's cameras in the VR scene (docs/xr.md, "Camera panels"): a large panel
// in front for the main camera, a small one above each hand for its wrist camera,
// and a heads-up line of the teleop state under the main panel.
//
// Frames come from the node as binary WebSocket messages (4-byte big-endian header
// length, JSON header {camera, seq, capture_ns, width, height}, JPEG). The node
// sends a camera's next frame only after this page reports the previous one drawn
// ({type: 'shown', camera, seq, page_ns}), so frames never queue.
//
// Frames: local-floor (+x right, +y up, -z forward, metres); a panel's own frame has
// +x right, +y up, +z out of its face, origin at its centre.

import { linkProgram } from '/static/gl_program.js';
import { multiply } from '/static/mat4.js';

export const CAMERAS = ['chest', 'top_front', 'top_back', 'left_wrist', 'right_wrist'];
export const MAIN_CHOICES = ['top_front', 'chest', 'top_back'];
const MAIN_W = 0.88, MAIN_H = 0.66;          // 4:3, about 35 deg wide at its distance
const MAIN_DISTANCE_M = 1.4, MAIN_DROP_M = 0.2;  // below the control panel, which sits above eye height
const WRIST_W = 0.2, WRIST_H = 0.15, WRIST_RISE_M = 0.15;
const HUD_H = 0.06, HUD_PX_PER_M = 1000;

export function parseFrame(buffer) {
  const view = new DataView(buffer);
  const n = view.getUint32(0, false);
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 4, n)));
  return { header, jpeg: new Uint8Array(buffer, 4 + n) };
}

function transform(m, p) {
  const o = [0, 0, 0, 0];
  for (let r = 0; r < 4; r++) o[r] = m[r] * p[0] + m[4 + r] * p[1] + m[8 + r] * p[2] + m[12 + r] * p[3];
  return o;
}

function forwardOf(q) {
  // (0, 0, -1) turned by q
  return [-(2 * (q.x * q.z + q.w * q.y)), -(2 * (q.y * q.z - q.w * q.x)), -(1 - 2 * (q.x * q.x + q.y * q.y))];
}

// A panel upright at `center`, turned about +y so its face looks towards `eye`, of size w x h.
function facing(center, eye, w, h) {
  const yaw = Math.atan2(eye[0] - center[0], eye[2] - center[2]);
  const c = Math.cos(yaw), s = Math.sin(yaw);
  return new Float32Array([c * w, 0, -s * w, 0, 0, h, 0, 0, s, 0, c, 0, center[0], center[1], center[2], 1]);
}

export class CameraView {
  constructor() {
    this.gl = null;
    this.mainCamera = 'top_front';
    this.show = { main: true, left: true, right: true };
    this.pending = new Map();   // camera -> {bitmap, header}: decoded, waiting for the next frame
    this.drawn = new Map();     // camera -> header of the frame on its texture
    this.textures = new Map();
    this.mainCenter = null;
    this.eye = null;
    this.hud = { text: null, canvas: document.createElement('canvas') };
    this.hud.canvas.width = Math.round(MAIN_W * HUD_PX_PER_M);
    this.hud.canvas.height = Math.round(HUD_H * HUD_PX_PER_M);
  }

  // Binds the panels to a WebGL context (a new one per XR session): textures start empty.
  attach(gl) {
    this.gl = gl;
    this.textures = new Map();
    this.hud.text = null;
    this.mainCenter = null;
    this._initGL();
    this.hudTexture = this._texture();
  }

  // The cameras whose frames the page wants (the node sends no others).
  wanted() {
    const out = [];
    if (this.show.main) out.push(this.mainCamera);
    if (this.show.left) out.push('left_wrist');
    if (this.show.right) out.push('right_wrist');
    return out;
  }

  // A decoded frame to put on its panel at the next draw; a newer one replaces a waiting one.
  offer(header, bitmap) {
    const old = this.pending.get(header.camera);
    if (old) old.bitmap.close();
    this.pending.set(header.camera, { header, bitmap });
  }

  // Uploads waiting frames; returns their headers (drawn in this XR frame).
  upload() {
    const gl = this.gl, done = [];
    for (const [camera, { header, bitmap }] of this.pending) {
      if (!this.textures.has(camera)) this.textures.set(camera, this._texture());
      gl.bindTexture(gl.TEXTURE_2D, this.textures.get(camera));
      gl.texImage2D(gl.TEXTURE_2D, 0, gl.RGBA, gl.RGBA, gl.UNSIGNED_BYTE, bitmap);
      bitmap.close();
      this.drawn.set(camera, header);
      done.push(header);
    }
    this.pending.clear();
    return done;
  }

  place(viewer) {
    const p = viewer.position, f = forwardOf(viewer.orientation);
    const h = Math.hypot(f[0], f[2]);
    const dir = h > 1e-6 ? [f[0] / h, 0, f[2] / h] : [0, 0, -1];
    this.mainCenter = [p.x + dir[0] * MAIN_DISTANCE_M, p.y - MAIN_DROP_M, p.z + dir[2] * MAIN_DISTANCE_M];
    this.eye = [p.x, p.y, p.z];
  }

  // Model matrices of the visible panels: [{name, camera, model}] (the HUD included, camera null).
  panels(hands) {
    const out = [];
    if (!this.mainCenter) return out;
    const eye = this.eye;
    if (this.show.main) out.push({ name: 'main', camera: this.mainCamera, model: facing(this.mainCenter, eye, MAIN_W, MAIN_H) });
    const hud = [this.mainCenter[0], this.mainCenter[1] - MAIN_H / 2 - HUD_H / 2 - 0.01, this.mainCenter[2]];
    out.push({ name: 'hud', camera: null, model: facing(hud, eye, MAIN_W, HUD_H) });
    for (const [side, camera] of [['left', 'left_wrist'], ['right', 'right_wrist']]) {
      const hand = hands[side];
      if (!this.show[side] || !hand) continue;
      const c = [hand.x, hand.y + WRIST_RISE_M, hand.z];
      out.push({ name: side, camera, model: facing(c, eye, WRIST_W, WRIST_H) });
    }
    return out;
  }

  // Where a target ray (XRRigidTransform) meets the main panel: true when it does.
  hitsMain(ray) {
    if (!this.mainCenter || !this.show.main) return false;
    const m = facing(this.mainCenter, this.eye, 1, 1);
    const n = [m[8], m[9], m[10]], ex = [m[0], m[1], m[2]];
    const o = [ray.position.x, ray.position.y, ray.position.z], d = forwardOf(ray.orientation);
    const rel = [o[0] - this.mainCenter[0], o[1] - this.mainCenter[1], o[2] - this.mainCenter[2]];
    const oz = rel[0] * n[0] + rel[1] * n[1] + rel[2] * n[2], dz = d[0] * n[0] + d[1] * n[1] + d[2] * n[2];
    if (oz <= 0 || dz >= -1e-9) return false;
    const s = -oz / dz, at = [rel[0] + s * d[0], rel[1] + s * d[1], rel[2] + s * d[2]];
    const u = at[0] * ex[0] + at[1] * ex[1] + at[2] * ex[2], v = at[1];
    return Math.abs(u) <= MAIN_W / 2 && Math.abs(v) <= MAIN_H / 2;
  }

  cycleMain() {
    const i = MAIN_CHOICES.indexOf(this.mainCamera);
    this.mainCamera = MAIN_CHOICES[(i + 1) % MAIN_CHOICES.length];
  }

  // The heads-up line; redrawn only when its text changes. Returns true when it was redrawn.
  setHud(text, alarm) {
    if (text === this.hud.text) return false;
    this.hud.text = text;
    const c = this.hud.canvas.getContext('2d'), w = this.hud.canvas.width, h = this.hud.canvas.height;
    c.fillStyle = alarm ? '#7a0000' : '#111418';
    c.fillRect(0, 0, w, h);
    c.fillStyle = alarm ? '#fff' : '#cfe8cf';
    c.font = `bold ${Math.round(h * 0.6)}px sans-serif`;
    c.textAlign = 'center';
    c.textBaseline = 'middle';
    c.fillText(text, w / 2, h / 2, w * 0.98);
    const gl = this.gl;
    gl.bindTexture(gl.TEXTURE_2D, this.hudTexture);
    gl.texImage2D(gl.TEXTURE_2D, 0, gl.RGBA, gl.RGBA, gl.UNSIGNED_BYTE, this.hud.canvas);
    return true;
  }

  // Draws the panels into every view; `probe` reads back the pixel at the main panel's centre
  // in the first view (for tests and the latency benchmark): returns [r, g, b, a] or null.
  draw(layer, views, hands, probe = false) {
    const gl = this.gl;
    gl.useProgram(this.prog);
    gl.disable(gl.DEPTH_TEST);
    gl.disable(gl.CULL_FACE);
    gl.bindBuffer(gl.ARRAY_BUFFER, this.quad);
    gl.enableVertexAttribArray(this.loc.pos);
    gl.vertexAttribPointer(this.loc.pos, 2, gl.FLOAT, false, 16, 0);
    gl.enableVertexAttribArray(this.loc.uv);
    gl.vertexAttribPointer(this.loc.uv, 2, gl.FLOAT, false, 16, 8);
    gl.activeTexture(gl.TEXTURE0);
    gl.uniform1i(this.loc.tex, 0);
    const panels = this.panels(hands).filter((p) => p.camera === null || this.textures.has(p.camera));
    let pixel = null;
    views.forEach((view, k) => {
      const vp = layer.getViewport(view);
      if (!vp || vp.width === 0) return;
      gl.viewport(vp.x, vp.y, vp.width, vp.height);
      const viewProj = multiply(view.projectionMatrix, view.transform.inverse.matrix);
      for (const p of panels) {
        gl.bindTexture(gl.TEXTURE_2D, p.camera === null ? this.hudTexture : this.textures.get(p.camera));
        gl.uniformMatrix4fv(this.loc.mvp, false, multiply(viewProj, p.model));
        gl.drawArrays(gl.TRIANGLE_STRIP, 0, 4);
      }
      if (probe && k === 0 && this.mainCenter && this.show.main && this.textures.has(this.mainCamera)) {
        const clip = transform(viewProj, [...this.mainCenter, 1]);
        const x = Math.round(vp.x + (clip[0] / clip[3] + 1) / 2 * vp.width);
        const y = Math.round(vp.y + (clip[1] / clip[3] + 1) / 2 * vp.height);
        const px = new Uint8Array(4);
        gl.readPixels(x, y, 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, px);
        pixel = Array.from(px);
      }
    });
    return pixel;
  }

  _texture() {
    const gl = this.gl, t = gl.createTexture();
    gl.bindTexture(gl.TEXTURE_2D, t);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MIN_FILTER, gl.LINEAR);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MAG_FILTER, gl.LINEAR);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_WRAP_S, gl.CLAMP_TO_EDGE);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_WRAP_T, gl.CLAMP_TO_EDGE);
    return t;
  }

  _initGL() {
    const gl = this.gl;
    const prog = linkProgram(gl,
      'attribute vec2 pos; attribute vec2 uv; uniform mat4 mvp; varying vec2 vUv;' +
      'void main() { vUv = uv; gl_Position = mvp * vec4(pos, 0.0, 1.0); }',
      'precision mediump float; varying vec2 vUv; uniform sampler2D tex;' +
      'void main() { gl_FragColor = texture2D(tex, vUv); }');
    this.prog = prog;
    this.loc = {
      pos: gl.getAttribLocation(prog, 'pos'), uv: gl.getAttribLocation(prog, 'uv'),
      mvp: gl.getUniformLocation(prog, 'mvp'), tex: gl.getUniformLocation(prog, 'tex'),
    };
    this.quad = gl.createBuffer();
    gl.bindBuffer(gl.ARRAY_BUFFER, this.quad);
    // unit quad in the panel plane (scaled by the model matrix); image row 0 at the top
    gl.bufferData(gl.ARRAY_BUFFER, new Float32Array([
      -0.5, -0.5, 0, 1, 0.5, -0.5, 1, 1, -0.5, 0.5, 0, 0, 0.5, 0.5, 1, 0]), gl.STATIC_DRAW);
  }
}
