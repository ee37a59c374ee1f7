// Drives the teleop page's camera panels in headless Chromium with IWER (emulated Quest 3).
// Usage: node camera_driver.mjs BASE_URL TOKEN [SECONDS]
// Prints one JSON line per step; exits non-zero on failure. With SECONDS it only watches
// the main camera for that long and prints what the page drew (the glass-to-glass benchmark).
import { chromium } from 'playwright-core';

const [base, token, seconds] = process.argv.slice(2);
const t0 = Date.now();
const log = (step, extra = {}) => console.log(JSON.stringify({ step, ms: Date.now() - t0, ...extra }));

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
const context = await browser.newContext({ ignoreHTTPSErrors: true });
const timeout = 30000;

try {
  const page = await context.newPage();
  page.on('pageerror', (e) => log('page_error', { message: e.message }));
  await page.goto(`${base}/?token=${token}&emulate=1`);
  await page.waitForFunction(() => window.teledora && window.teledora.status.paired, null, { timeout });
  // before VR the flat page shows the main camera and reports it drawn (the benchmark goes straight to VR)
  if (!seconds) {
    await page.waitForFunction(() => window.teledora.camStats.flatShown >= 3, null, { timeout });
    log('flat_page_frames', { flatShown: await page.evaluate(() => window.teledora.camStats.flatShown) });
  }
  await page.click('#enter');
  await page.waitForFunction(() => window.teledora.status.inVR && window.teledora.scene.frames > 10, null, { timeout });
  await page.evaluate(() => { window.teledora.camStats.probe = true; window.teledora.camStats.shown.length = 0; });
  log('in_vr');

  if (seconds) {
    const fpsStart = await page.evaluate(() => ({ frames: window.teledora.scene.frames, t: performance.now() }));
    await new Promise((r) => setTimeout(r, Number(seconds) * 1000));
    const out = await page.evaluate(() => ({ shown: window.teledora.camStats.shown, frames: window.teledora.scene.frames,
      t: performance.now(), received: window.teledora.camStats.received }));
    const xrFps = (out.frames - fpsStart.frames) / ((out.t - fpsStart.t) / 1000);
    log('watched', { shown: out.shown.map(({ camera, seq, frame, capture_ns, page_ns }) => ({ camera, seq, frame, capture_ns, page_ns })),
      xr_fps: xrFps, received: out.received, seconds: (out.t - fpsStart.t) / 1000 });
  } else {
    const drawn = (cam, n) => page.waitForFunction(([c, k]) => window.teledora.camStats.shown.filter(
      (s) => s.camera === c && s.pixel).length >= k, [cam, n], { timeout });
    await drawn('top_front', 15);
    await page.waitForFunction(() => window.teledora.camStats.shown.some((s) => s.camera === 'left_wrist'), null, { timeout });
    log('drawn', { shown: await page.evaluate(() => window.teledora.camStats.shown) });

    // the HUD follows the e-stop: latch from the page, watch the frame it shows up in
    await page.dispatchEvent('#estop', 'click');
    await page.waitForFunction(() => window.teledora.camStats.hud.some((h) => h.latched), null, { timeout });
    log('estop', { hud: await page.evaluate(() => window.teledora.camStats.hud),
      changes: await page.evaluate(() => window.teledora.camStats.stateChanges),
      text: await page.evaluate(() => { const m = window.teledora.cams.hud.model; return `${m.title} · ${m.details}`; }) });

    // switch the left wrist panel off: the node stops sending it; the main panel to the chest camera
    await page.evaluate(() => {
      const box = document.getElementById('cam_left'); box.checked = false; box.dispatchEvent(new Event('change'));
      const sel = document.getElementById('cam_main_choice'); sel.value = 'chest'; sel.dispatchEvent(new Event('change'));
    });
    await new Promise((r) => setTimeout(r, 1000));  // anything already in flight lands
    const before = await page.evaluate(() => ({ ...window.teledora.camStats.received }));
    await drawn('chest', 5);
    await new Promise((r) => setTimeout(r, 1500));
    const after = await page.evaluate(() => ({ ...window.teledora.camStats.received }));
    log('switched', { before, after, main: await page.evaluate(() => window.teledora.cams.mainCamera),
      chest: await page.evaluate(() => window.teledora.camStats.shown.filter((s) => s.camera === 'chest')) });
  }
  await page.close();
  log('done');
} catch (e) {
  log('failed', { message: String(e && e.message || e) });
  process.exitCode = 1;
} finally {
  await Promise.race([browser.close(), new Promise((r) => setTimeout(r, 2000))]);
  process.exit(process.exitCode || 0);
}
