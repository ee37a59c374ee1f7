// teledora WebXR teleop page: streams both controllers (target-ray pose in
// local-floor + xr-standard gamepad) to the xr node as feed frames (docs/xr.md).
// Clock: every stamp is this page's clock (performance.timeOrigin + now, ns);
// the node maps it to its own from the ping/pong round trips, so each pose
// carries the time it was sampled and the node judges its true age.
const params = new URLSearchParams(location.search);
const token = params.get('token') || '';
const UI_PULSE_MS = 300;      // page buttons are sent as a level this long
const IDLE_FRAME_MS = 100;    // outside VR the page still reports (e-stop must work)

const $ = (id) => document.getElementById(id);
const session = Math.random().toString(16).slice(2, 10);
const uiUntil = { estop: 0, release_stop: 0, pause: 0 };
const status = { paired: false, refused: '', framesSent: 0, state: null, inVR: false, lastFrameAt: 0, pongs: 0 };
window.teledora = { status, emulator: null };

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
  ws.onopen = () => ws.send(JSON.stringify({ type: 'hello', token, session }));
  ws.onmessage = (ev) => {
    const msg = JSON.parse(ev.data);
    if (msg.type === 'ping') {
      // answered at once: the node brackets this clock reading between its send and our answer
      ws.send(JSON.stringify({ type: 'pong', id: msg.id, page_ns: nowNs() }));
      status.pongs += 1;
    } else if (msg.type === 'welcome') {
      status.paired = true; status.refused = ''; reconnectDelay = 250;
      showLink('paired: this page is in control', true);
    } else if (msg.type === 'refused') {
      status.refused = msg.reason; showLink(`refused: ${msg.reason}`, false);
    } else if (msg.type === 'state') {
      status.state = msg; showState(msg);
    }
  };
  ws.onclose = () => {
    const wasPaired = status.paired;
    status.paired = false;
    status.pongs = 0;
    if (status.refused) return;  // refused for a reason: retrying would not help
    showLink(wasPaired ? 'link lost, reconnecting…' : 'cannot reach the robot, retrying…', false);
    setTimeout(connect, reconnectDelay);
    reconnectDelay = Math.min(reconnectDelay * 2, 4000);
  };
}

function showState(s) {
  const parts = [];
  if (s.estop_latched) parts.push('E-STOP LATCHED');
  parts.push(s.arms_paused ? 'arms paused' : 'arms live');
  if (s.left_clutched) parts.push('left clutched');
  if (s.right_clutched) parts.push('right clutched');
  parts.push(`pinch ${s.left_pinch}/${s.right_pinch}`);
  $('robot').textContent = parts.join(' · ');
  document.body.classList.toggle('estop', !!s.estop_latched);
}

function pulse(name) { uiUntil[name] = performance.now() + UI_PULSE_MS; sendFrame(null); }

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
  if (!ws || ws.readyState !== WebSocket.OPEN || !status.paired || status.pongs === 0) return;
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
    ui: { estop: t < uiUntil.estop, release_stop: t < uiUntil.release_stop, pause: t < uiUntil.pause },
    hands,
  };
  ws.send(JSON.stringify(msg));
  status.framesSent += 1;
  status.lastFrameAt = t;
}

function clearColor() {
  const s = status.state;
  if (!status.paired) return [0.05, 0.1, 0.4];
  if (s && s.estop_latched) return [0.5, 0.0, 0.0];
  if (s && s.arms_paused) return [0.45, 0.3, 0.0];
  return [0.0, 0.25, 0.05];
}

function onXRFrame(t, frame) {
  frame.session.requestAnimationFrame(onXRFrame);
  const layer = frame.session.renderState.baseLayer;
  gl.bindFramebuffer(gl.FRAMEBUFFER, layer.framebuffer);
  gl.clearColor(...clearColor(), 1.0);
  gl.clear(gl.COLOR_BUFFER_BIT);
  sendFrame(frame, t);
}

async function enterVR() {
  xrSession = await navigator.xr.requestSession('immersive-vr', { requiredFeatures: ['local-floor'] });
  gl = $('gl').getContext('webgl', { xrCompatible: true });
  // the view is only a status colour: a tiny framebuffer keeps the GPU (or a software
  // renderer) idle so the controller stream keeps its rate
  await xrSession.updateRenderState({ baseLayer: new XRWebGLLayer(xrSession, gl, { framebufferScaleFactor: 0.1, antialias: false }) });
  refSpace = await xrSession.requestReferenceSpace('local-floor');
  xrSession.addEventListener('end', () => { xrSession = null; status.inVR = false; });
  xrSession.addEventListener('visibilitychange', () => sendFrame(null));
  status.inVR = true;
  xrSession.requestAnimationFrame(onXRFrame);
}

$('estop').addEventListener('click', () => pulse('estop'));
$('release').addEventListener('click', () => pulse('release_stop'));
$('pause').addEventListener('click', () => pulse('pause'));
$('enter').addEventListener('click', () => enterVR().catch((e) => showLink(`cannot enter VR: ${e.message}`, false)));
document.addEventListener('visibilitychange', () => sendFrame(null));
setInterval(() => { if (performance.now() - status.lastFrameAt > IDLE_FRAME_MS) sendFrame(null); }, IDLE_FRAME_MS);

if (navigator.xr && await navigator.xr.isSessionSupported('immersive-vr')) {
  $('enter').disabled = false;
} else {
  $('enter').textContent = 'WebXR immersive-vr not available here';
}
connect();
