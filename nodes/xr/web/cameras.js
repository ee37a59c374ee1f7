// The robot's cameras in the VR scene (docs/xr.md, "Camera panels"): a large panel
// centred in front for the main camera, and under it the heads-up line with a smaller
// panel either side for the wrist cameras, all placed together (and recentred together).
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
import { DETAIL, FRAME, RECORDING } from '/static/hud.js';

export const CAMERAS = ['chest', 'top_front', 'top_back', 'left_wrist', 'right_wrist'];
export const MAIN_CHOICES = ['top_front', 'chest', 'top_back'];
// The main camera: centred at eye height, 1.4 m ahead, 1.7 m wide (62 deg): at the
// page's framebuffer scale of 1 a Quest 3 gives it about 1,100 pixels across, more
// than a 640-pixel camera image has.
const MAIN_DISTANCE_M = 1.4, MAIN_W = 1.7, MAIN_H = 1.275;
// Under it, the heads-up line in the middle and the wrist cameras either side, fixed
// in the scene with the main panel (they no longer ride on the hands, which leave the view).
const GAP_M = 0.03;
const HUD_W = 1.2, HUD_H = 0.21, HUD_PX_PER_M = 1000;
const WRIST_W = 0.4, WRIST_H = 0.3;
// HUD texture layout (pixels): the white frame, the title row, the details row
const HUD_FRAME_PX = 14, HUD_ROW1_PX = 100, HUD_TITLE_PX = 56, HUD_DETAIL_PX = 46;

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

export function forwardOf(q) {
  // (0, 0, -1) turned by q
  return [-(2 * (q.x * q.z + q.w * q.y)), -(2 * (q.y * q.z - q.w * q.x)), -(1 - 2 * (q.x * q.x + q.y * q.y))];
}

const norm = (v) => { const n = Math.hypot(...v); return v.map((x) => x / n); };
const cross = (a, b) => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
const dot = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];

// A panel at `center` whose face looks straight at `eye` (turned and tilted), of size w x h.
function facing(center, eye, w, h) {
  const ez = norm([eye[0] - center[0], eye[1] - center[1], eye[2] - center[2]]);
  const ex = norm(cross([0, 1, 0], ez)), ey = cross(ez, ex);
  return new Float32Array([...ex.map((x) => x * w), 0, ...ey.map((x) => x * h), 0, ...ez, 0, ...center, 1]);
}

// Where a ray (origin o, direction d) meets a panel of model m (unit quad scaled):
// the distance along the ray, or null when it misses or comes from behind.
export function rayHitsPanel(m, o, d) {
  const c = [m[12], m[13], m[14]], n = [m[8], m[9], m[10]];
  const rel = [o[0] - c[0], o[1] - c[1], o[2] - c[2]];
  const oz = dot(rel, n), dz = dot(d, n);
  if (oz <= 0 || dz >= -1e-9) return null;
  const s = -oz / dz, at = [rel[0] + s * d[0], rel[1] + s * d[1], rel[2] + s * d[2]];
  const ex = [m[0], m[1], m[2]], ey = [m[4], m[5], m[6]];
  const u = dot(at, ex) / dot(ex, ex), v = dot(at, ey) / dot(ey, ey);
  return Math.abs(u) <= 0.5 && Math.abs(v) <= 0.5 ? s : null;
}

// A point of a panel, from its fractions across (0 left .. 1 right) and down (0 top .. 1 bottom).
export function panelPoint(m, fx, fy) {
  const u = fx - 0.5, v = 0.5 - fy;
  return [0, 1, 2].map((i) => m[12 + i] + m[i] * u + m[4 + i] * v);
}

// Draws a state's glyph (hud.js TONES) in the square (x, y, size) of a 2-D canvas context.
export function drawGlyph(c, glyph, x, y, size, color) {
  const cx = x + size / 2, cy = y + size / 2, r = size * 0.42;
  c.save();
  c.fillStyle = color; c.strokeStyle = color; c.lineWidth = size * 0.12;
  c.beginPath();
  if (glyph === 'octagon') {
    for (let k = 0; k < 8; k++) {
      const a = Math.PI / 8 + k * Math.PI / 4;
      c.lineTo(cx + r * Math.cos(a), cy + r * Math.sin(a));
    }
    c.closePath(); c.stroke();
    c.fillRect(cx - r * 0.5, cy - size * 0.06, r, size * 0.12);
  } else if (glyph === 'bars') {
    c.fillRect(cx - r * 0.75, cy - r, r * 0.5, 2 * r); c.fillRect(cx + r * 0.25, cy - r, r * 0.5, 2 * r);
  } else if (glyph === 'ring') {
    c.arc(cx, cy, r * 0.85, 0, 2 * Math.PI); c.stroke();
  } else if (glyph === 'cross') {
    c.moveTo(cx - r, cy - r); c.lineTo(cx + r, cy + r); c.moveTo(cx + r, cy - r); c.lineTo(cx - r, cy + r); c.stroke();
  } else if (glyph === 'dot') {
    c.arc(cx, cy, r * 0.7, 0, 2 * Math.PI); c.fill();
  } else {  // question
    c.font = `bold ${Math.round(size)}px sans-serif`; c.textAlign = 'center'; c.textBaseline = 'middle';
    c.fillText('?', cx, cy + size * 0.04);
  }
  c.restore();
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
    this.dir = null;
    this.lastView = null;       // the first view's matrix and viewport at the last draw (tests project with it)
    this.hud = { key: null, model: null, canvas: document.createElement('canvas') };
    this.hud.canvas.width = Math.round(HUD_W * HUD_PX_PER_M);
    this.hud.canvas.height = Math.round(HUD_H * HUD_PX_PER_M);
  }

  // Binds the panels to a WebGL context (a new one per XR session): textures start empty.
  attach(gl) {
    this.gl = gl;
    this.textures = new Map();
    this.hud.key = null;
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

  // Lays the panels out in front of a viewer pose: the main camera centred on the eyes'
  // height and the horizontal direction they look in. Called at the session's first frame
  // and whenever the operator recentres.
  place(viewer) {
    const p = viewer.position, f = forwardOf(viewer.orientation);
    const h = Math.hypot(f[0], f[2]);
    this.dir = h > 1e-6 ? [f[0] / h, 0, f[2] / h] : [0, 0, -1];
    this.mainCenter = [p.x + this.dir[0] * MAIN_DISTANCE_M, p.y, p.z + this.dir[2] * MAIN_DISTANCE_M];
    this.eye = [p.x, p.y, p.z];
  }

  // Model matrices of the visible panels: [{name, camera, model}] (the HUD included, camera null).
  panels() {
    const out = [];
    if (!this.mainCenter) return out;
    const eye = this.eye, c = this.mainCenter, right = [-this.dir[2], 0, this.dir[0]];
    const at = (dx, dy) => [c[0] + right[0] * dx, c[1] + dy, c[2] + right[2] * dx];
    if (this.show.main) out.push({ name: 'main', camera: this.mainCamera, model: facing(c, eye, MAIN_W, MAIN_H) });
    const top = -MAIN_H / 2 - GAP_M;
    out.push({ name: 'hud', camera: null, model: facing(at(0, top - HUD_H / 2), eye, HUD_W, HUD_H) });
    const side = HUD_W / 2 + GAP_M + WRIST_W / 2;
    for (const [name, camera, dx] of [['left', 'left_wrist', -side], ['right', 'right_wrist', side]]) {
      if (this.show[name]) out.push({ name, camera, model: facing(at(dx, top - WRIST_H / 2), eye, WRIST_W, WRIST_H) });
    }
    return out;
  }

  panel(name) { return this.panels().find((p) => p.name === name) || null; }

  // The nearest distance at which a ray (XRRigidTransform) meets a camera panel or the HUD, or null.
  hitDistance(ray) {
    const o = [ray.position.x, ray.position.y, ray.position.z], d = forwardOf(ray.orientation);
    let best = null;
    for (const p of this.panels()) {
      const s = rayHitsPanel(p.model, o, d);
      if (s !== null && (best === null || s < best)) best = s;
    }
    return best;
  }

  // Whether a target ray (XRRigidTransform) points at the main panel.
  hitsMain(ray) {
    const p = this.show.main ? this.panel('main') : null;
    return !!p && rayHitsPanel(p.model, [ray.position.x, ray.position.y, ray.position.z], forwardOf(ray.orientation)) !== null;
  }

  cycleMain() {
    const i = MAIN_CHOICES.indexOf(this.mainCamera);
    this.mainCamera = MAIN_CHOICES[(i + 1) % MAIN_CHOICES.length];
  }

  // How high the HUD's text stands from the eyes, in degrees: [title row, details row].
  hudTextDeg() {
    const p = this.panel('hud');
    if (!p) return null;
    const d = Math.hypot(p.model[12] - this.eye[0], p.model[13] - this.eye[1], p.model[14] - this.eye[2]);
    return [HUD_TITLE_PX, HUD_DETAIL_PX].map((px) => 2 * Math.atan(px / HUD_PX_PER_M / 2 / d) * 180 / Math.PI);
  }

  // The angle the main panel spans across, and its centre's elevation from the eyes, in degrees.
  mainAngles() {
    const p = this.panel('main');
    if (!p) return null;
    const deg = (a) => a * 180 / Math.PI;
    const toL = panelPoint(p.model, 0, 0.5).map((x, i) => x - this.eye[i]);
    const toR = panelPoint(p.model, 1, 0.5).map((x, i) => x - this.eye[i]);
    const c = [p.model[12] - this.eye[0], p.model[13] - this.eye[1], p.model[14] - this.eye[2]];
    return { wide: deg(Math.acos(dot(norm(toL), norm(toR)))), elevation: deg(Math.atan2(c[1], Math.hypot(c[0], c[2]))) };
  }

  // The HUD's texture layout, in texture pixels, for tests that read it back from the screen.
  hudLayout() {
    const W = this.hud.canvas.width, H = this.hud.canvas.height, f = HUD_FRAME_PX;
    return { width: W, height: H, frame: f, row1: [f, f, W - f, f + HUD_ROW1_PX], row2: [f, f + HUD_ROW1_PX, W - f, H - f],
      chip: this.hud.chipRect || null, titlePx: HUD_TITLE_PX, detailPx: HUD_DETAIL_PX };
  }

  // The heads-up line (hud.js hudModel); redrawn only when it changes. Returns true when it was redrawn.
  setHud(model) {
    const key = JSON.stringify(model);
    if (key === this.hud.key) return false;
    this.hud.key = key;
    this.hud.model = model;
    const c = this.hud.canvas.getContext('2d'), W = this.hud.canvas.width, H = this.hud.canvas.height, f = HUD_FRAME_PX;
    drawHud(c, model, W, H, f, HUD_ROW1_PX, HUD_TITLE_PX, HUD_DETAIL_PX, (rect) => { this.hud.chipRect = rect; });
    const gl = this.gl;
    gl.bindTexture(gl.TEXTURE_2D, this.hudTexture);
    gl.texImage2D(gl.TEXTURE_2D, 0, gl.RGBA, gl.RGBA, gl.UNSIGNED_BYTE, this.hud.canvas);
    return true;
  }

  // Draws the panels into every view, depth-tested (the caller clears the depth buffer);
  // `probe` reads back the pixel at the main panel's centre in the first view (for tests and
  // the latency benchmark): returns [r, g, b, a] or null.
  draw(layer, views, probe = false) {
    const gl = this.gl;
    gl.useProgram(this.prog);
    gl.enable(gl.DEPTH_TEST);
    gl.depthFunc(gl.LEQUAL);
    gl.disable(gl.CULL_FACE);
    gl.bindBuffer(gl.ARRAY_BUFFER, this.quad);
    gl.enableVertexAttribArray(this.loc.pos);
    gl.vertexAttribPointer(this.loc.pos, 2, gl.FLOAT, false, 16, 0);
    gl.enableVertexAttribArray(this.loc.uv);
    gl.vertexAttribPointer(this.loc.uv, 2, gl.FLOAT, false, 16, 8);
    gl.activeTexture(gl.TEXTURE0);
    gl.uniform1i(this.loc.tex, 0);
    const panels = this.panels().filter((p) => p.camera === null || this.textures.has(p.camera));
    let pixel = null;
    views.forEach((view, k) => {
      const vp = layer.getViewport(view);
      if (!vp || vp.width === 0) return;
      gl.viewport(vp.x, vp.y, vp.width, vp.height);
      const viewProj = multiply(view.projectionMatrix, view.transform.inverse.matrix);
      if (k === 0) this.lastView = { viewProj, vp: { x: vp.x, y: vp.y, width: vp.width, height: vp.height } };
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

  // A world point in the first view's framebuffer pixels at the last draw, from the top left
  // (tests read screenshots there); null before any draw or behind the eye.
  project(point) {
    if (!this.lastView) return null;
    const { viewProj, vp } = this.lastView;
    const clip = transform(viewProj, [...point, 1]);
    if (clip[3] <= 0) return null;
    const fbHeight = this.gl.drawingBufferHeight;
    return [vp.x + (clip[0] / clip[3] + 1) / 2 * vp.width, fbHeight - (vp.y + (clip[1] / clip[3] + 1) / 2 * vp.height)];
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

// The HUD onto a 2-D canvas: a white frame (solid, doubled when latched, with an inner dashed
// line when there is no link), the title row on the state's fill with its glyph, the details
// row on a dark fill with the recording chip at its right. `chipAt(rect)` gets the chip's rectangle.
export function drawHud(c, model, W, H, f, row1, titlePx, detailPx, chipAt = () => {}) {
  const tone = model.tone;
  c.fillStyle = FRAME;
  c.fillRect(0, 0, W, H);
  c.fillStyle = tone.fill;
  c.fillRect(f, f, W - 2 * f, row1);
  c.fillStyle = DETAIL.fill;
  c.fillRect(f, f + row1, W - 2 * f, H - 2 * f - row1);
  const inner = (style) => {
    c.save();
    c.strokeStyle = tone.text; c.lineWidth = 5;
    if (style === 'dashed') c.setLineDash([22, 14]);
    c.strokeRect(f + 8, f + 8, W - 2 * f - 16, row1 - 16);
    c.restore();
  };
  if (tone.frame === 'dashed' || tone.frame === 'double') inner(tone.frame);
  const g = row1 * 0.62;
  drawGlyph(c, tone.glyph, f + 22, f + (row1 - g) / 2, g, tone.text);
  c.textBaseline = 'middle';
  c.textAlign = 'left';
  c.fillStyle = tone.text;
  c.font = `bold ${titlePx}px sans-serif`;
  const tx = f + 22 + g + 20;
  c.fillText(model.title, tx, f + row1 / 2 + 2, W - f - 24 - tx);
  const y2 = f + row1 + (H - 2 * f - row1) / 2 + 2;
  let right = W - f;
  chipAt(null);
  if (model.chip) {
    c.font = `bold ${detailPx}px sans-serif`;
    const cw = Math.min(c.measureText(model.chip.text).width + detailPx * 1.6, W * 0.45);
    const rect = [right - cw, f + row1, right, H - f];
    c.fillStyle = model.chip.recording ? RECORDING.fill : DETAIL.fill;
    c.fillRect(rect[0], rect[1], cw, rect[3] - rect[1]);
    c.fillStyle = model.chip.recording ? RECORDING.text : DETAIL.text;
    let x = rect[0] + detailPx * 0.3;
    if (model.chip.recording) { drawGlyph(c, 'dot', x, y2 - detailPx * 0.45, detailPx * 0.9, RECORDING.text); x += detailPx; }
    c.font = `${model.chip.recording ? 'bold ' : ''}${detailPx}px sans-serif`;
    c.fillText(model.chip.text, x, y2, rect[2] - x - detailPx * 0.3);
    chipAt(rect);
    right = rect[0] - 10;
  }
  c.fillStyle = DETAIL.text;
  c.font = `${detailPx}px sans-serif`;
  c.fillText(model.details, f + 22, y2, right - f - 30);
}
