// What the operator sees, state by state, in headless Chromium with IWER (emulated Quest 3):
// screenshots of the VR view and of the flat page, with where the heads-up line's text,
// frame and surroundings lie in each, the controls' state, and two depth probes (a ray
// that ends at the panel it meets; the nearer of two overlapping panels drawn in front).
// Usage: node operator_view.mjs BASE_URL TOKEN OUT_DIR
// Prints one JSON line per step; exits non-zero on failure.
import { chromium } from 'playwright-core';
import { sceneControls } from './scene_controls.mjs';

const [base, token, outDir] = process.argv.slice(2);
const log = (step, extra = {}) => console.log(JSON.stringify({ step, ...extra }));
const timeout = 30000;
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--use-angle=swiftshader', '--enable-unsafe-swiftshader'],
});

function network() {
  const Real = window.WebSocket;
  window.__sockets = [];
  window.WebSocket = class extends Real {
    constructor(url, ...rest) {
      super(window.__netDown ? 'wss://127.0.0.1:9/ws' : url, ...rest);
      window.__sockets.push(this);
    }
  };
}

// Where the HUD's parts lie on the VR view (screenshot pixels), from the HUD panel's corners
// projected with the view's last matrices: text rows, the frame band's middle, and outside it.
const vrGeometry = (page) => page.evaluate(() => {
  const { cams } = window.teledora;
  const p = cams.panel('hud'), L = cams.hudLayout();
  const m = p.model, W = L.width, H = L.height, f = L.frame;
  const pt = (x, y) => {
    const u = x / W - 0.5, v = 0.5 - y / H;
    const w = [0, 1, 2].map((i) => m[12 + i] + m[i] * u + m[4 + i] * v);
    return cams.project(w);
  };
  const rect = ([x0, y0, x1, y1]) => { const a = pt(x0, y0), b = pt(x1, y1); return [a[0], a[1], b[0], b[1]]; };
  const frame = [];
  for (const fx of [0.2, 0.4, 0.6, 0.8]) frame.push(pt(fx * W, f / 2), pt(fx * W, H - f / 2));
  for (const fy of [0.3, 0.7]) frame.push(pt(f / 2, fy * H), pt(W - f / 2, fy * H));
  // outside: 3 cm below the bottom edge (nothing is drawn there but the scene's background)
  const outside = [0.2, 0.4, 0.6, 0.8].map((fx) => pt(fx * W, H + 30));
  const canvas = document.getElementById('gl');
  const r = canvas.getBoundingClientRect();
  return { row1: rect(L.row1), row2: rect(L.row2), chip: L.chip ? rect(L.chip) : null, frame, outside,
    scale: r.width / canvas.width, offset: [r.left, r.top] };
});

const flatGeometry = (page) => page.evaluate(() => {
  const c = document.getElementById('hud'), r = c.getBoundingClientRect(), L = window.teledora.cams.hudLayout();
  const s = r.width / c.width, H = c.height, W = c.width, f = L.frame;
  const tr = ([x0, y0, x1, y1]) => [r.left + x0 * s, r.top + y0 * s, r.left + x1 * s, r.top + y1 * s];
  const frame = [];
  for (const fx of [0.2, 0.4, 0.6, 0.8]) frame.push([r.left + fx * W * s, r.top + f / 2 * s], [r.left + fx * W * s, r.bottom - f / 2 * s]);
  const outside = [0.2, 0.5, 0.8].map((fx) => [r.left + fx * r.width, r.bottom + 6]);
  return { row1: tr(L.row1), row2: tr(L.row2), chip: L.chip ? tr(L.chip) : null, frame, outside, scale: 1, offset: [0, 0] };
});

const controlsNow = (page) => page.evaluate(() => {
  const dom = {};
  for (const id of ['estop', 'pause', 'release', 'confirm', 'enter']) dom[id] = !document.getElementById(id).disabled;
  const panel = window.teledora.scene.panel && window.teledora.scene.panel.content
    ? JSON.parse(window.teledora.scene.panel.content) : null;
  return { dom, panel: panel && panel.enabled, hud: window.teledora.cams.hud.model, flatHud: window.teledora.hudNow(),
    estopLabel: document.getElementById('estop').textContent };
});

async function capture(page, name, key) {
  await page.waitForFunction((k) => window.teledora.cams.hud.model && window.teledora.cams.hud.model.key === k
    && document.getElementById('hud').dataset.state === k, key, { timeout });
  const f0 = await page.evaluate(() => window.teledora.scene.frames);
  await page.waitForFunction((n) => window.teledora.scene.frames > n + 3, f0, { timeout });
  const vr = await vrGeometry(page);
  await page.screenshot({ path: `${outDir}/vr_${name}.png`, timeout: 120000 });
  const controls = await controlsNow(page);
  await page.evaluate(() => { document.querySelector('[data-webxr_runtime]').style.visibility = 'hidden'; });
  const flat = await flatGeometry(page);
  await page.screenshot({ path: `${outDir}/page_${name}.png`, timeout: 120000 });
  await page.evaluate(() => { document.querySelector('[data-webxr_runtime]').style.visibility = ''; });
  log('state', { name, key, vr, flat, ...controls });
}

try {
  const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1280, height: 720 } });
  await context.addInitScript(network);
  const page = await context.newPage();
  page.on('pageerror', (e) => log('page_error', { message: e.message }));
  await page.goto(`${base}/?token=${token}&emulate=1`);
  await page.waitForFunction(() => window.teledora && window.teledora.status.paired && window.teledora.status.pongs > 0
    && window.teledora.status.state, null, { timeout });
  await page.click('#enter');
  await page.waitForFunction(() => window.teledora.status.inVR && window.teledora.scene.frames > 10
    && window.teledora.cams.textures.has('top_front') && window.teledora.cams.textures.has('left_wrist')
    && window.teledora.cams.textures.has('right_wrist'), null, { timeout });
  // IWER shows the page's WebGL canvas as the headset's view; the page keeps it hidden (a headset shows its own)
  await page.evaluate(() => { document.getElementById('gl').hidden = false; });
  const sc = sceneControls(page, timeout);

  log('layout', await page.evaluate(() => ({ main: window.teledora.cams.mainAngles(), hudDeg: window.teledora.cams.hudTextDeg(),
    scale: window.teledora.status.framebufferScale })));

  // ---- depth: the right ray aimed at a point of the main panel ends there
  await page.evaluate(() => {
    const c = window.teledora.emulator.controllers.right, m = window.teledora.cams.panel('main').model;
    const u = -0.25, v = 0.3, t = [0, 1, 2].map((i) => m[12 + i] + m[i] * u + m[4 + i] * v);
    const d = [t[0] - c.position.x, t[1] - c.position.y, t[2] - c.position.z];
    const n = Math.hypot(...d), f = d.map((x) => x / n);
    const ax = f[1], ay = -f[0], w = 1 - f[2], q = Math.hypot(ax, ay, w);
    c.quaternion.set(ax / q, ay / q, 0, w / q);
    window.__rayTarget = { t, o: [c.position.x, c.position.y, c.position.z], f };
  });
  const fr = await page.evaluate(() => window.teledora.scene.frames);
  await page.waitForFunction((n) => window.teledora.scene.frames > n + 5, fr, { timeout });
  const ray = await page.evaluate(() => {
    const { t, o, f } = window.__rayTarget, cams = window.teledora.cams;
    const at = (s) => cams.project([0, 1, 2].map((i) => o[i] + f[i] * s));
    const hit = Math.hypot(t[0] - o[0], t[1] - o[1], t[2] - o[2]);
    return { hit, length: window.teledora.scene.rays, before: [0.5, 0.7].map((k) => at(hit * k)), beyond: [1.3, 1.6].map((k) => at(hit * k)) };
  });
  await page.screenshot({ path: `${outDir}/depth_ray.png`, timeout: 120000 });
  log('ray', ray);
  await page.evaluate(() => { window.teledora.emulator.controllers.right.quaternion.set(0, 0, 0, 1); });

  // ---- depth: raise the head 0.5 m: the control panel (0.75 m) now lies over the main camera (1.4 m)
  await page.evaluate(() => { const h = window.teledora.emulator; h.position.set(h.position.x, h.position.y + 0.5, h.position.z); });
  const f1 = await page.evaluate(() => window.teledora.scene.frames);
  await page.waitForFunction((n) => window.teledora.scene.frames > n + 5, f1, { timeout });
  const overlap = await page.evaluate(() => {
    const { cams, scene, emulator } = window.teledora;
    const eye = [emulator.position.x, emulator.position.y, emulator.position.z];
    const main = cams.panel('main').model;
    const probe = (u, v) => {
      const w = scene.panel.toWorld(u, v), d = w.map((x, i) => x - eye[i]), n = Math.hypot(...d);
      const f = d.map((x) => x / n);
      // the same line of sight meets the main panel behind it
      const c = [main[12], main[13], main[14]], nn = [main[8], main[9], main[10]];
      const rel = eye.map((x, i) => x - c[i]);
      const s = -(rel[0] * nn[0] + rel[1] * nn[1] + rel[2] * nn[2]) / (f[0] * nn[0] + f[1] * nn[1] + f[2] * nn[2]);
      const at = rel.map((x, i) => x + s * f[i]);
      const ex = [main[0], main[1], main[2]], ey = [main[4], main[5], main[6]];
      const uu = (at[0] * ex[0] + at[1] * ex[1] + at[2] * ex[2]) / (ex[0] ** 2 + ex[1] ** 2 + ex[2] ** 2);
      const vv = (at[0] * ey[0] + at[1] * ey[1] + at[2] * ey[2]) / (ey[0] ** 2 + ey[1] ** 2 + ey[2] ** 2);
      return { px: cams.project(w), panelDistance: n, mainDistance: s, onMain: Math.abs(uu) <= 0.5 && Math.abs(vv) <= 0.5 };
    };
    // panel points with nothing on them but its fill: the bottom row's empty places
    return [probe(-0.15, -0.09), probe(-0.31, -0.09), probe(0.14, -0.09)];
  });
  await page.screenshot({ path: `${outDir}/depth_overlap.png`, timeout: 120000 });
  log('overlap', { probes: overlap });
  await page.evaluate(() => { const h = window.teledora.emulator; h.position.set(h.position.x, h.position.y - 0.5, h.position.z); });

  // ---- the states, one after another
  const st = await page.evaluate(() => window.teledora.status.state);
  if (st.arms_paused) { await page.dispatchEvent('#pause', 'click'); await sc.pausedIs(false); }
  await capture(page, 'paired', 'live');
  await page.dispatchEvent('#pause', 'click');
  await sc.pausedIs(true);
  await capture(page, 'paused', 'paused');
  await new Promise((r) => setTimeout(r, 400));  // the pause level drops before the next press
  await page.dispatchEvent('#pause', 'click');
  await sc.pausedIs(false);
  await sc.click('ep_start');
  await page.waitForFunction(() => window.teledora.status.episode && window.teledora.status.episode.open, null, { timeout });
  await page.evaluate(() => window.teledora.emulator.controllers.right.quaternion.set(0, 0, 0, 1));
  await page.waitForFunction(() => { const m = window.teledora.cams.hud.model; return m && m.chip && m.chip.recording; }, null, { timeout });
  await capture(page, 'recording', 'live');
  await page.dispatchEvent('#estop', 'click');
  await sc.latchedIs(true);
  await capture(page, 'latched', 'latched');

  // the link goes, and stays down
  await page.evaluate(() => { window.__netDown = true; for (const s of window.__sockets) s.close(); });
  await page.waitForFunction(() => !window.teledora.status.paired, null, { timeout });
  await capture(page, 'link_lost', 'linkLost');

  // meanwhile another page takes control; when this one's link comes back it is refused
  const other = await browser.newContext({ ignoreHTTPSErrors: true });
  const second = await other.newPage();
  await second.goto(`${base}/?token=${token}&emulate=1`);
  await second.waitForFunction(() => window.teledora && window.teledora.status.paired, null, { timeout });
  await page.evaluate(() => { window.__netDown = false; });
  await page.waitForFunction(() => window.teledora.status.refusedCode === 'busy', null, { timeout });
  await capture(page, 'refused', 'notPaired');
  await other.close();
  await page.close();
  log('done');
} catch (e) {
  log('failed', { message: String(e && e.message || e) });
  process.exitCode = 1;
} finally {
  await Promise.race([browser.close(), new Promise((r) => setTimeout(r, 2000))]);
  process.exit(process.exitCode || 0);
}
