// Drives the teledora WebXR page in headless Chromium with IWER emulating a Quest 3.
// Usage: node webxr_driver.mjs BASE_URL TOKEN
// Prints one JSON line per step; exits non-zero on failure.
import { chromium } from 'playwright-core';

const [base, token] = process.argv.slice(2);
const t0 = Date.now();
const log = (step, extra = {}) => console.log(JSON.stringify({ step, ms: Date.now() - t0, ...extra }));

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
const context = await browser.newContext({ ignoreHTTPSErrors: true });
const timeout = 20000;

async function refusedReason(url) {
  // another device: its own browser context
  const other = await browser.newContext({ ignoreHTTPSErrors: true });
  const p = await other.newPage();
  await p.goto(url);
  await p.waitForFunction(() => window.teledora && window.teledora.status.refused, null, { timeout });
  const reason = await p.evaluate(() => window.teledora.status.refused);
  await other.close();
  return reason;
}

try {
  log('bad_token', { reason: await refusedReason(`${base}/?token=wrong&emulate=1`) });

  const page = await context.newPage();
  page.on('pageerror', (e) => log('page_error', { message: e.message }));
  await page.goto(`${base}/?token=${token}&emulate=1`);
  await page.waitForFunction(() => window.teledora && window.teledora.status.paired, null, { timeout });
  await page.click('#enter');
  await page.waitForFunction(() => window.teledora.status.inVR && window.teledora.status.framesSent > 20, null, { timeout });
  log('in_vr');

  log('second_client', { reason: await refusedReason(`${base}/?token=${token}&emulate=1`) });
  await page.bringToFront();  // a headless tab behind another one stops its animation frames

  const frames = async (n) => {
    const start = await page.evaluate(() => window.teledora.status.framesSent);
    await page.waitForFunction((s) => window.teledora.status.framesSent >= s, start + n, { timeout });
  };
  const dev = (fn, arg) => page.evaluate(fn, arg);

  await frames(10);
  await dev(() => { const c = window.teledora.emulator.controllers.left; c.position.set(c.position.x + 0.1, c.position.y, c.position.z); });
  await frames(10);
  log('moved_left');

  await dev(() => window.teledora.emulator.controllers.left.updateButtonValue('y-button', 1));
  await page.waitForFunction(() => window.teledora.status.state && window.teledora.status.state.left_clutched, null, { timeout });
  log('clutch_on');
  await dev(() => { const c = window.teledora.emulator.controllers.left; c.position.set(c.position.x + 0.2, c.position.y, c.position.z); });
  await frames(5);
  await dev(() => window.teledora.emulator.controllers.left.updateButtonValue('y-button', 0));
  await page.waitForFunction(() => window.teledora.status.state && !window.teledora.status.state.left_clutched, null, { timeout });
  log('clutch_off');

  await dev(() => { window.teledora.emulator.controllers.right.connected = false; });
  await frames(10);
  await dev(() => { window.teledora.emulator.controllers.right.connected = true; });
  await frames(10);
  log('right_reconnected');

  // the IWER headset view covers the page in immersive mode, so press the button the way a
  // second hand on the flat page would: a DOM click event on it
  await page.dispatchEvent('#estop', 'click');
  await page.waitForFunction(() => window.teledora.status.state && window.teledora.status.state.estop_latched, null, { timeout });
  log('estop_latched', { robot: await page.textContent('#robot') });
  await frames(5);
  await page.close();
  log('done');
} catch (e) {
  log('failed', { message: String(e && e.message || e) });
  process.exitCode = 1;
} finally {
  // closing a browser with a live XR session can stall for many seconds: give it a moment, then go
  await Promise.race([browser.close(), new Promise((r) => setTimeout(r, 2000))]);
  process.exit(process.exitCode || 0);
}
