// E-stop latency trials on the teledora page in headless Chromium with IWER (a
// Quest 3): alternately latches the stop with the in-scene E-STOP (right trigger
// on the panel) and with the grip gesture (both squeezes), and releases it with
// the two in-scene steps between trials.
// Usage: node estop_trials.mjs BASE_URL TOKEN TRIALS
// Prints one JSON line per trial, then {"step": "done"}; exits non-zero on failure.
import { chromium } from 'playwright-core';
import { sceneControls } from './scene_controls.mjs';

const [base, token, trialsArg] = process.argv.slice(2);
const trials = Number(trialsArg || 10);
const log = (step, extra = {}) => console.log(JSON.stringify({ step, ...extra }));
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
try {
  const page = await (await browser.newContext({ ignoreHTTPSErrors: true })).newPage();
  const timeout = 20000;
  await page.goto(`${base}/?token=${token}&emulate=1`);
  await page.waitForFunction(() => window.teledora && window.teledora.status.paired, null, { timeout });
  await page.click('#enter');
  await page.waitForFunction(() => window.teledora.status.inVR && window.teledora.status.state, null, { timeout });
  const c = sceneControls(page, timeout);
  const origin = await page.evaluate(() => performance.timeOrigin);
  const wallNs = (t) => Math.round((origin + t) * 1e6);
  const release = async () => {
    await c.click('release');
    await c.armedIs(true);
    await c.click('confirm');
    await c.latchedIs(false);
  };
  await c.frames(30);
  for (let i = 0; i < trials; i++) {
    // in-scene E-STOP: acts on the trigger press
    await c.aim('estop');
    await c.hovered('estop');
    await c.frames(5);
    const n = await page.evaluate(() => window.teledora.scene.acts.length);
    await c.trigger(1);
    await c.latchedIs(true);
    const act = await page.evaluate((k) => window.teledora.scene.acts[k], n);
    const shown = await c.shownLatchedAfter(act.t);
    log('trial', { kind: 'scene', i, press_ns: wallNs(act.t), frames: shown.frame - act.frame, ms: shown.t - act.t });
    await c.trigger(0);
    await c.afterStopLevel(act.t);
    await release();

    // grip gesture: both squeezes, applied by the emulator at the next XR frame
    await c.frames(5);
    await c.squeeze(['left', 'right'], 1);
    await c.latchedIs(true);
    const g = await page.evaluate(() => window.teledora.scene.gestures.at(-1));
    const seen = await c.shownLatchedAfter(g.t);
    log('trial', { kind: 'gesture', i, press_ns: wallNs(g.t), frames: seen.frame - g.frame, ms: seen.t - g.t });
    await c.squeeze(['left', 'right'], 0);
    await c.frames(3);
    await release();
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
