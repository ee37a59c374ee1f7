// teledora WebXR teleop page: streams both controllers (target-ray pose in
// local-floor + xr-standard gamepad) to the xr node as feed frames (docs/xr.md),
// and in VR draws the stop and episode controls in the scene, pointed at with the rays.
// Clock: every stamp is this page's clock (performance.timeOrigin + now, ns);
// the node maps it to its own from the ping/pong round trips, so each pose
// carries the time it was sampled and the node judges its true age.
import { ControlPanel } from '/static/scene.js';
import { CameraView, drawHud, parseFrame } from '/static/cameras.js';
import { linkReason, pageControls, StopAck } from '/static/page_controls.js';
import { hudModel, LinkAge } from '/static/hud.js';

const params = new URLSearchParams(location.search);
const token = params.get('token') || '';
const UI_PULSE_MS = 300;      // page buttons are sent as a level this long
const IDLE_FRAME_MS = 100;    // outside VR the page still reports (e-stop must work)
const SQUEEZE_HELD = 0.9;     // the grip gesture's threshold (teleop.yaml estop_squeeze_threshold)
// the headset's recommended resolution: the main camera panel (62 deg) then gets more
// pixels across than a 640-pixel camera image has (docs/xr.md, "Camera panels")
const FRAMEBUFFER_SCALE = 1.0;
const EPISODE_STALE_MS = 3000; // the episodes node repeats its state every second: older is unknown

const $ = (id) => document.getElementById(id);
const session = Math.random().toString(16).slice(2, 10);
const uiUntil = { estop: 0, release_stop: 0, pause: 0, episode_start: 0, episode_keep: 0, episode_discard: 0 };
// a second press waiting for the level to drop
const repress = { release_stop: null, pause: null, episode_start: null, episode_keep: null, episode_discard: null };
const status = { framebufferScale: FRAMEBUFFER_SCALE, paired: false, refused: '', refusedCode: '', everPaired: false, vrSupported: false, enterRefused: '', framesSent: 0,
  state: null, inVR: false, lastFrameAt: 0, pongs: 0, episode: null, episodeAt: 0 };
// the page E-STOP's acknowledgement (page_controls.js): teleop's state echoing the press as latched
const stopAck = new StopAck();
// in-VR controls, and what they did (read by the browser tests and the e-stop benchmark): each
// panel action (acts: button, hand, XR frame count, feed seq, page time), each grip gesture the
// page saw (gestures), and the first frame the panel showed each change of the e-stop (shown)
const scene = { panel: null, frames: 0, hover: {}, pressed: new Map(), acts: [], gestures: [], shown: [], gesture: false,
  recentre: false, rays: [] };
const linkAge = new LinkAge();  // the HUD's link age, smoothed over the last second
// camera panels (cameras.js): what arrived and what was drawn (camera, seq, XR frame, and with
// `probe` on, the pixel at the main panel's centre), and when the HUD showed each e-stop change
const cams = new CameraView();
const camStats = { received: {}, shown: [], probe: false, hud: [], stateChanges: [], flatShown: 0 };
window.teledora = { status, emulator: null, scene, cams, camStats, stopAck, controls, enterVR: () => enterVR(),
  hudNow: () => hudNow(), recentre: () => { scene.recentre = true; } };

let ws = null;
let seq = 0;
let reconnectDelay = 250;
let xrSession = null;
let refSpace = null;
let gl = null;

// the page clock in ns; `ms` is a time on the performance.now() timeline (an XR frame's time)
function clockNs(ms) { return Math.round((performance.timeOrigin + ms) * 1e6); }
function nowNs() { return clockNs(performance.now()); }
function finite(v) { return Number.isFinite(v) ? v : 0; }  // JSON would turn NaN into null

if (params.get('emulate')) {
  // desktop trials and tests: IWER emulates a Quest 3 (served only when the node enables it)
  const iwer = await import('/iwer.module.js');
  const device = new iwer.XRDevice(iwer.metaQuest3);
  device.installRuntime({ forceInstall: true });
  window.teledora.emulator = device;
}

function showLink(text, ok) { $('link').textContent = text; $('link').style.color = ok ? '#8f8' : '#f88'; }

function connect() {
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  ws = new WebSocket(`${scheme}://${location.host}/ws`);
  ws.binaryType = 'arraybuffer';
  ws.onopen = () => ws.send(JSON.stringify({ type: 'hello', token, session }));
  ws.onmessage = (ev) => {
    if (ev.data instanceof ArrayBuffer) { onCameraFrame(ev.data); return; }
    const msg = JSON.parse(ev.data);
    if (msg.type === 'ping') {
      // answered at once: the node brackets this clock reading between its send and our answer
      ws.send(JSON.stringify({ type: 'pong', id: msg.id, page_ns: nowNs() }));
      status.pongs += 1;
      if (status.pongs === 1) renderControls();
    } else if (msg.type === 'welcome') {
      status.paired = true; status.everPaired = true; status.refused = ''; status.refusedCode = ''; reconnectDelay = 250;
      showLink('paired: this page is in control', true);
      sendView();
      renderControls();
    } else if (msg.type === 'refused') {
      status.refused = msg.reason; status.refusedCode = msg.code || 'refused';
      showLink(`refused: ${msg.reason}`, false);
      renderControls();
    } else if (msg.type === 'state') {
      const was = !!(status.state && status.state.estop_latched);
      if (!!msg.estop_latched !== was) camStats.stateChanges.push({ latched: !!msg.estop_latched, frame: scene.frames, t: performance.now() });
      status.state = msg; status.stateAt = performance.now(); showState(msg);
      stopAck.onState(msg, status.stateAt);
      renderControls();
    } else if (msg.type === 'episode') {
      status.episode = msg; status.episodeAt = performance.now(); $('episode').textContent = episodeModel().status;
    }
  };
  ws.onclose = () => {
    const wasPaired = status.paired;
    status.paired = false;
    status.pongs = 0;
    renderControls();
    if (status.refused) return;  // refused for a reason: retrying would not help
    showLink(wasPaired ? 'link lost, reconnecting…' : 'cannot reach the robot, retrying…', false);
    setTimeout(connect, reconnectDelay);
    reconnectDelay = Math.min(reconnectDelay * 2, 4000);
  };
}

// ------------------------------------------------------------ camera panels
function sendView() {
  if (ws && ws.readyState === WebSocket.OPEN && status.paired) {
    ws.send(JSON.stringify({ type: 'view', cameras: cams.wanted().join(',') }));
  }
}

// reports a camera frame drawn (its XR frame's commands all issued); returns the page time it gave
function sendShown(header) {
  const t = nowNs();
  if (ws && ws.readyState === WebSocket.OPEN) {
    ws.send(JSON.stringify({ type: 'shown', camera: header.camera, seq: header.seq, page_ns: t }));
  }
  return t;
}

function onCameraFrame(buffer) {
  const { header, jpeg } = parseFrame(buffer);
  camStats.received[header.camera] = (camStats.received[header.camera] || 0) + 1;
  createImageBitmap(new Blob([jpeg], { type: 'image/jpeg' })).then((bitmap) => {
    if (xrSession) { cams.offer(header, bitmap); return; }  // drawn (and reported) in the next XR frame
    // outside VR: the main camera on the page, reported at once (the stream must not stall)
    if (header.camera === cams.mainCamera) {
      const c = $('camflat');
      c.getContext('2d').drawImage(bitmap, 0, 0, c.width, c.height);
      camStats.flatShown += 1;
    }
    bitmap.close();
    sendShown(header);
  }, () => sendShown(header));  // an undecodable frame: let the next one come
}

// What the heads-up line shows now (hud.js): in VR and, the same drawing, on the flat page.
function hudNow() {
  const now = performance.now();
  const raw = status.state ? now - (status.stateAt || 0) : null;
  if (raw !== null) linkAge.sample(raw, now);
  const ep = episodeModel();
  const episode = ep.known ? { open: !!status.episode.open, number: status.episode.number, seconds: ep.seconds } : null;
  const ack = stopAck.view(now);
  return hudModel({ why: linkReason(linkNow()), state: status.state, episode, rawAgeMs: raw, smoothAgeMs: linkAge.value(),
    ackLabel: ack.phase === 'sent' || ack.phase === 'unacked' ? ack.label : '' });
}

function drawCameras(frame, layer, viewer) {
  if (!cams.mainCenter) cams.place(viewer.transform);
  const uploaded = cams.upload();
  const hud = hudNow();
  if (cams.setHud(hud)) {
    const latched = !!(status.state && status.state.estop_latched), last = camStats.hud[camStats.hud.length - 1];
    if (!last || last.latched !== latched) camStats.hud.push({ latched, frame: scene.frames, t: performance.now() });
  }
  const pixel = cams.draw(layer, viewer.views, camStats.probe);
  return uploaded.map((h) => ({ camera: h.camera, seq: h.seq, capture_ns: h.capture_ns, frame: scene.frames,
    pixel: h.camera === cams.mainCamera ? pixel : null }));
}

function showState(s) {
  const parts = [];
  if (s.estop_latched) parts.push('E-STOP LATCHED');
  parts.push(s.arms_paused ? 'arms paused' : 'arms live');
  if (s.left_clutched) parts.push('left clutched');
  if (s.right_clutched) parts.push('right clutched');
  parts.push(`pinch ${s.left_pinch}/${s.right_pinch}`);
  if (s.release_armed) parts.push('release armed: confirm within 5 s');
  $('robot').textContent = parts.join(' · ');
  document.body.classList.toggle('estop', !!s.estop_latched);
}

// ------------------------------------------------------------ what the controls may do
function linkNow() {
  return { hasToken: token !== '', paired: status.paired, clocked: status.pongs > 0, everPaired: status.everPaired,
    refusedCode: status.refusedCode, refusedText: status.refused };
}

function controls() { return pageControls(linkNow(), status.state, status.vrSupported); }

// Every button's disabled attribute and the reason beside them follow the link; the E-STOP's
// label follows its acknowledgement (and turns to a warning when none comes in time).
function renderControls() {
  const c = controls();
  for (const name of ['estop', 'pause', 'release', 'confirm', 'enter']) {
    const b = $(name);
    b.disabled = !c.enabled[name];
    if (b.disabled) b.title = name === 'enter' ? c.enterReason : c.reason || 'not offered in this state';
    else b.removeAttribute('title');
  }
  $('confirm').hidden = c.confirmHidden;
  $('controls_reason').textContent = c.reason;
  const ack = stopAck.view(performance.now());
  $('estop').textContent = ack.label;
  $('estop').dataset.ack = ack.phase;
  $('estop_ack').textContent = ack.detail;
  $('estop_ack').dataset.ack = ack.phase;
  drawFlatHud();
}

// the flat page shows the same heads-up line as the headset, drawn the same way
function drawFlatHud() {
  const c = $('hud');
  const model = hudNow();
  const key = JSON.stringify(model);
  if (c.dataset.key === key) return;
  c.dataset.key = key;
  c.dataset.state = model.key;
  c.setAttribute('aria-label', `${model.title}. ${model.details}. ${model.chip ? model.chip.text : ''}`);
  const l = cams.hudLayout();
  drawHud(c.getContext('2d'), model, c.width, c.height, l.frame, l.row1[3] - l.row1[1], l.titlePx, l.detailPx);
}

// Page and scene buttons are sent as a level for UI_PULSE_MS; the scheme acts on its rising
// edges, so every press must reach it as a report with the level down, then one with it up.
function pulse(name) {
  const now = performance.now();
  if (name === 'estop') { pressStop(now); return; }
  if (now >= uiUntil[name]) { raise(name); return; }
  // pressed again while its level is still up (a release step right after the other): wait for it to drop
  if (!repress[name]) {
    repress[name] = setTimeout(() => { repress[name] = null; raise(name); }, uiUntil[name] - now + 1);
  }
}

function raise(name) {
  if (status.lastFrameAt < uiUntil[name]) sendFrame(null);  // the newest report still had it up: send it down
  uiUntil[name] = performance.now() + UI_PULSE_MS;
  return sendFrame(null);
}

// The stop level goes up (or, pressed again while up, stays up longer); the acknowledgement
// waits for a state that has applied the first frame carrying this press.
function pressStop(now) {
  let sent;
  if (now >= uiUntil.estop) {
    sent = raise('estop') ? seq : null;
  } else {
    uiUntil.estop = now + UI_PULSE_MS;
    sent = sendFrame(null) ? seq : null;
  }
  stopAck.press(sent, now);
  renderControls();
}

function handOf(frame, src, sampleNs) {
  const gp = src.gamepad;
  const pose = frame ? frame.getPose(src.targetRaySpace, refSpace) : null;
  const b = (i) => (gp && gp.buttons[i]) || null;
  const axis = (i) => (gp ? finite(gp.axes[i]) : 0);
  const hand = {
    connected: true,
    pose_valid: !!pose,
    pose_ns: sampleNs,
    input_ns: sampleNs,
    trigger: b(0) ? finite(b(0).value) : 0,
    squeeze: b(1) ? finite(b(1).value) : 0,
    stick: [axis(2), axis(3)],
    stick_click: !!(b(3) && b(3).pressed),
    primary: !!(b(4) && b(4).pressed),
    secondary: !!(b(5) && b(5).pressed),
    // xr-standard has no menu slot; some runtimes append it after the thumbrest
    menu: !!(b(7) && b(7).pressed),
  };
  if (pose) {
    const p = pose.transform.position, q = pose.transform.orientation;
    hand.position = [p.x, p.y, p.z];
    hand.orientation = [q.x, q.y, q.z, q.w];
  }
  return hand;
}

// `frameTime`: the XR frame's time (when its poses and gamepads were sampled), or
// null outside the XR frame loop (then the gamepads are read now)
function sendFrame(frame, frameTime = null) {
  // frames wait for the first ping: until the node has a round trip it cannot map our stamps
  if (!ws || ws.readyState !== WebSocket.OPEN || !status.paired || status.pongs === 0) return false;
  const t = performance.now();
  const sentNs = clockNs(t);
  // a runtime may time a frame at its predicted display, after now: a sample is never later than its send
  const sampleNs = frameTime === null ? sentNs : Math.min(clockNs(frameTime), sentNs);
  const hands = { left: { connected: false }, right: { connected: false } };
  if (xrSession) {
    for (const src of xrSession.inputSources) {
      if ((src.handedness === 'left' || src.handedness === 'right') && src.gamepad) {
        hands[src.handedness] = handOf(frame, src, sampleNs);
      }
    }
  }
  const visible = document.visibilityState === 'visible';
  const focused = xrSession ? visible && xrSession.visibilityState === 'visible' : visible;
  const msg = {
    version: 1, session, seq: ++seq, sent_ns: sentNs, frame: 'webxr', focused,
    ui: Object.fromEntries(Object.entries(uiUntil).map(([k, until]) => [k, t < until])),
    hands,
  };
  ws.send(JSON.stringify(msg));
  status.framesSent += 1;
  status.lastFrameAt = t;
  return true;
}

// the scene behind the panels: a dark tint of the state, never what tells it (the HUD does)
function clearColor() { return hudNow().background; }

// ------------------------------------------------------------ in-VR controls
// Stop-direction actions (E-STOP, PAUSE) act on the trigger press; go-direction
// ones (RESUME, RELEASE, CONFIRM) on its release over the same button, so the
// gripper the trigger also drives cannot move while arms come back. The episode
// buttons act on the release too (pointing away before letting go cancels), and
// discarding takes two of them, DISCARD then CONFIRM, like the e-stop's release:
// the episodes node arms on the first and discards on the second within its window.

// What the episode half of the panel shows, from the episodes node's state
// (docs/xr.md, "In-VR controls: the episode buttons"); with none (not wired, or gone quiet) every step stays offered.
function episodeModel() {
  const e = status.episode, paired = !linkReason(linkNow());
  const age = performance.now() - status.episodeAt;
  const known = !!e && age < EPISODE_STALE_MS;
  const secs = known && e.open ? Math.floor(e.open_for_ns / 1e9 + age / 1000) : 0;
  let text, color;
  if (!known) {
    text = 'EPISODE STATE UNKNOWN'; color = '#aaa';
  } else if (e.open) {
    text = `RECORDING episode ${e.number} · ${secs} s`;
    if (e.discard_armed) text += ' · CONFIRM to discard';
    color = e.discard_armed ? '#ffc14d' : '#e1a6ff';  // not the stop's red
  } else {
    text = `NOT RECORDING · ${e.kept} kept, ${e.discarded} discarded`; color = '#8f8';
  }
  const open = known && e.open, armed = open && e.discard_armed;
  return {
    status: text, color, known, seconds: secs, task: known ? e.task : 'task: no episode state', discardArmed: armed,
    showConfirm: armed || (paired && !known),
    enabled: {
      ep_start: paired && (!known || !e.open), ep_keep: paired && (!known || open),
      ep_discard: paired && (!known || (open && !armed)), ep_confirm: paired && (!known || armed),
    },
  };
}

function sceneModel() {
  const known = !!status.state, s = status.state || {}, why = linkReason(linkNow()), paired = !why;
  const latched = !!s.estop_latched, armed = latched && !!s.release_armed;
  let text = !paired ? why.split(':')[0].toUpperCase() : !known ? 'ROBOT STATE UNKNOWN'
    : latched ? 'E-STOP LATCHED' : (s.arms_paused ? 'ARMS PAUSED' : 'ARMS LIVE');
  if (latched) text += gripsHeld() ? ' · let go of the grips' : (armed ? ' · CONFIRM to release' : '');
  const ack = stopAck.view(performance.now());  // a panel or page press not (yet) acknowledged says so first
  if (ack.phase === 'sent' || ack.phase === 'unacked') text = `${ack.label} · ${text}`;
  // with no robot state (teleop/state not wired) both release steps stay offered
  const ep = episodeModel();
  return {
    status: text, statusKey: hudNow().key, estopLatched: latched, paused: !!s.arms_paused, releaseArmed: armed, showConfirm: armed || (paired && !known),
    enabled: {
      estop: paired, pause: paired && known && !latched,
      release: paired && (!known || (latched && !armed)), confirm: paired && (!known || armed),
      recentre: true,  // moves nothing on the robot
      ...ep.enabled,
    },
    episode: { status: ep.status, color: ep.color, task: ep.task, discardArmed: ep.discardArmed, showConfirm: ep.showConfirm },
  };
}

// The grip gesture (both squeezes at or past the threshold) is the teleop scheme's to act on:
// the page only reports the squeezes, and here notes which hands hold one.
function squeezing() {
  const held = new Set();
  if (!xrSession) return held;
  for (const src of xrSession.inputSources) {
    const b = src.gamepad && src.gamepad.buttons[1];
    if (b && b.value >= SQUEEZE_HELD) held.add(src.handedness);
  }
  return held;
}

function gripsHeld() { return squeezing().size > 0; }

function rayPose(frame, src) {
  try { return frame.getPose(src.targetRaySpace, refSpace); } catch (e) { return null; }
}

function act(name, src) {
  if (name === 'recentre') {  // the view only: nothing goes to the robot
    scene.recentre = true;
    scene.acts.push({ name, hand: src.handedness, frame: scene.frames, seq, t: performance.now() });
    return;
  }
  const ui = { estop: 'estop', pause: 'pause', release: 'release_stop', confirm: 'release_stop', ep_start: 'episode_start',
    ep_keep: 'episode_keep', ep_discard: 'episode_discard', ep_confirm: 'episode_discard' }[name];
  pulse(ui);  // sends a feed frame at once
  scene.acts.push({ name, hand: src.handedness, frame: scene.frames, seq, t: performance.now() });
}

function onSelectStart(ev) {
  const pose = rayPose(ev.frame, ev.inputSource);
  const name = pose && scene.panel ? scene.panel.hit(pose.transform) : null;
  const model = sceneModel();
  if (!name && pose && cams.hitsMain(pose.transform)) {  // the main camera panel: show the next camera
    cams.cycleMain();
    $('cam_main_choice').value = cams.mainCamera;
    sendView();
    return;
  }
  if (!name || !model.enabled[name]) return;
  const now = name === 'estop' || (name === 'pause' && !model.paused);
  scene.pressed.set(ev.inputSource, { name, onRelease: !now });
  if (now) act(name, ev.inputSource);
}

function onSelectEnd(ev) {
  const press = scene.pressed.get(ev.inputSource);
  scene.pressed.delete(ev.inputSource);
  if (!press || !press.onRelease) return;
  const pose = rayPose(ev.frame, ev.inputSource);
  const name = pose && scene.panel ? scene.panel.hit(pose.transform) : null;
  if (name === press.name && sceneModel().enabled[name]) act(name, ev.inputSource);
}

function drawScene(frame, layer, viewer) {
  const panel = scene.panel;
  panel.follow(viewer.transform);
  const latched = !!(status.state && status.state.estop_latched);
  const last = scene.shown[scene.shown.length - 1];
  if (!last || last.latched !== latched) scene.shown.push({ latched, frame: scene.frames, t: performance.now() });
  const rays = [];
  const hover = new Set();
  for (const src of frame.session.inputSources) {
    if (src.targetRayMode !== 'tracked-pointer') continue;
    const pose = rayPose(frame, src);
    if (!pose) continue;
    const name = panel.hit(pose.transform);
    const at = panel.intersect(pose.transform);
    scene.hover[src.handedness] = name;
    if (name) hover.add(name);
    // a ray ends at the first thing it meets: the control panel or a camera panel
    const hits = [at ? at.distance : null, cams.hitDistance(pose.transform)].filter((d) => d !== null);
    rays.push({ transform: pose.transform, length: hits.length ? Math.min(...hits) : 0, color: name ? [1, 1, 1, 1] : [0.6, 0.8, 1, 1] });
  }
  scene.rays = rays.map((r) => r.length);
  panel.setContent({ ...sceneModel(), hover });
  panel.draw(layer, viewer.views, rays);
}

function onXRFrame(t, frame) {
  frame.session.requestAnimationFrame(onXRFrame);
  scene.frames += 1;
  const held = squeezing(), gesture = held.has('left') && held.has('right');
  if (gesture && !scene.gesture) scene.gestures.push({ frame: scene.frames, seq: seq + 1, t: performance.now() });
  scene.gesture = gesture;
  const layer = frame.session.renderState.baseLayer;
  gl.bindFramebuffer(gl.FRAMEBUFFER, layer.framebuffer);
  gl.clearColor(...clearColor(), 1.0);
  gl.clearDepth(1.0);
  gl.clear(gl.COLOR_BUFFER_BIT | gl.DEPTH_BUFFER_BIT);
  const viewer = frame.getViewerPose(refSpace);
  let shown = [];
  if (viewer) {
    if (scene.recentre) {  // the operator asked: the camera panels and the control panel in front of the eyes again
      scene.recentre = false;
      cams.place(viewer.transform);
      scene.panel.place(viewer.transform);
    }
    shown = drawCameras(frame, layer, viewer);
    drawScene(frame, layer, viewer);
  }
  sendFrame(frame, t);
  for (const s of shown) {
    s.page_ns = sendShown(s);
    camStats.shown.push(s);
    if (camStats.shown.length > 2000) camStats.shown.shift();
  }
}

async function enterVR() {
  const c = controls();
  if (!c.enabled.enter) throw new Error(c.enterReason);  // a page that cannot stop the robot does not go into VR
  xrSession = await navigator.xr.requestSession('immersive-vr', { requiredFeatures: ['local-floor'] });
  gl = $('gl').getContext('webgl', { xrCompatible: true });
  // a handful of textured quads and two lines: the full recommended resolution costs little
  await xrSession.updateRenderState({ baseLayer: new XRWebGLLayer(xrSession, gl, { framebufferScaleFactor: FRAMEBUFFER_SCALE, antialias: false }) });
  refSpace = await xrSession.requestReferenceSpace('local-floor');
  cams.attach(gl);
  scene.panel = scene.panel || new ControlPanel(gl);
  scene.panel.center = null;  // a new session has a new local-floor: place the panel again
  xrSession.addEventListener('selectstart', onSelectStart);
  xrSession.addEventListener('selectend', onSelectEnd);
  xrSession.addEventListener('end', () => { xrSession = null; status.inVR = false; scene.pressed.clear(); });
  xrSession.addEventListener('visibilitychange', () => sendFrame(null));
  status.inVR = true;
  xrSession.requestAnimationFrame(onXRFrame);
}

for (const side of ['main', 'left', 'right']) {
  $(`cam_${side}`).addEventListener('change', (ev) => { cams.show[side] = ev.target.checked; sendView(); });
}
$('cam_main_choice').addEventListener('change', (ev) => { cams.mainCamera = ev.target.value; sendView(); });
$('estop').addEventListener('click', () => pulse('estop'));
$('release').addEventListener('click', () => pulse('release_stop'));
$('confirm').addEventListener('click', () => pulse('release_stop'));
$('pause').addEventListener('click', () => pulse('pause'));
$('enter').addEventListener('click', () => enterVR().catch((e) => {
  status.enterRefused = e.message;
  showLink(`cannot enter VR: ${e.message}`, false);
}));
document.addEventListener('visibilitychange', () => sendFrame(null));
setInterval(() => {
  if (performance.now() - status.lastFrameAt > IDLE_FRAME_MS) sendFrame(null);
  renderControls();  // the acknowledgement's deadline passes without any message
}, IDLE_FRAME_MS);

renderControls();
status.vrSupported = !!navigator.xr && await navigator.xr.isSessionSupported('immersive-vr');
if (!status.vrSupported) $('enter').textContent = 'WebXR immersive-vr not available here';
renderControls();
connect();
