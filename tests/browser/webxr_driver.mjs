// Drives the teledora WebXR page in headless Chromium with IWER emulating a Quest 3.
// Usage: node webxr_driver.mjs BASE_URL TOKEN
// Prints one JSON line per step; exits non-zero on failure.
import { chromium } from 'playwright-core';
import { sceneControls } from './scene_controls.mjs';

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
  const stateFlag = (name, value) => page.waitForFunction(([k, v]) => {
    const s = window.teledora.status.state;
    return !!s && !!s[k] === v;
  }, [name, value], { timeout });
  // A fence through teleop: press and release the right A (slow). Teleop applies reports in
  // order but folds a backlog into a few steps, so a loaded machine can step past a pose;
  // once the page shows A held, teleop has stepped on a report sent after the fence began,
  // with the left hand as it was then.
  const fence = async () => {
    await dev(() => window.teledora.emulator.controllers.right.updateButtonValue('a-button', 1));
    await stateFlag('right_slow', true);
    await dev(() => window.teledora.emulator.controllers.right.updateButtonValue('a-button', 0));
    await stateFlag('right_slow', false);
  };

  await frames(10);
  await fence();  // teleop anchored the left arm on the pose before the move
  await dev(() => { const c = window.teledora.emulator.controllers.left; c.position.set(c.position.x + 0.1, c.position.y, c.position.z); });
  await frames(10);
  await fence();  // and commanded the moved pose before the clutch
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

  // ---- the stop in the operator's hand: grip gesture, in-scene buttons, two-step release
  const { until, state, latchedIs, armedIs, pausedIs, squeeze, aim, hovered, trigger, click, shownLatchedAfter,
    afterStopLevel } = sceneControls(page, timeout);

  await frames(5);
  await squeeze(['left', 'right'], 1);  // both grips fully: applied at the next XR frame
  await latchedIs(true);
  const gesture = await page.evaluate(() => window.teledora.scene.gestures.at(-1));
  log('gesture_latched', { gesture, shown: await shownLatchedAfter(gesture.t), robot: await page.textContent('#robot') });

  // release while both grips are still held: the first step is refused
  log('release_held', { sent: await click('release') });
  await frames(10);
  log('release_held_state', { state: await state() });

  await squeeze(['left', 'right'], 0);
  await frames(5);
  log('release_arm', { sent: await click('release') });
  await armedIs(true);
  // the release button is inactive while armed: a second click there sends nothing
  log('release_again', { sent: await click('release'), state: await state() });
  log('release_confirm', { sent: await click('confirm') });
  await latchedIs(false);
  log('released', { state: await state() });

  await click('pause');  // paused after the release: RESUME acts on the trigger's release
  await pausedIs(false);
  log('resumed');

  // the in-scene E-STOP acts on the trigger press, in the frame it is pressed
  await aim('estop');
  await hovered('estop');
  const n = await page.evaluate(() => window.teledora.scene.acts.length);
  await trigger(1);
  await latchedIs(true);
  const act = await page.evaluate((k) => window.teledora.scene.acts[k], n);
  log('scene_estop', { act, shown: await shownLatchedAfter(act.t) });
  await trigger(0);
  await afterStopLevel(act.t);

  // an armed release is cancelled by a stop input (one grip); letting go, arm and confirm release
  await click('release');
  await armedIs(true);
  await squeeze(['left'], 1);
  await armedIs(false);
  await squeeze(['left'], 0);
  await frames(5);
  log('cancelled', { state: await state() });
  await click('release');
  await armedIs(true);
  await click('confirm');
  await latchedIs(false);
  await click('pause');  // resume (on release)
  await pausedIs(false);
  await aim('pause');
  await hovered('pause');
  await trigger(1);  // PAUSE acts on the press
  await pausedIs(true);
  await trigger(0);
  log('scene_pause');

  // ---- the episode panel (right half): START shows the task, KEEP, DISCARD armed then confirmed
  const episode = () => page.evaluate(() => window.teledora.status.episode);
  const episodeIs = (pred) => until(pred);
  // what the panel drew last (its texture is redrawn from this model whenever it changes)
  const panelEpisode = () => page.evaluate(() => JSON.parse(window.teledora.scene.panel.content).episode);
  await episodeIs(() => { const e = window.teledora.status.episode; return e && !e.open; });
  await until(() => JSON.parse(window.teledora.scene.panel.content).episode.status.startsWith('NOT RECORDING'));
  log('episode_idle', { episode: await episode(), shown: await panelEpisode() });
  log('episode_start', { sent: await click('ep_start') });
  await episodeIs(() => { const e = window.teledora.status.episode; return e && e.open && e.number === 1; });
  // the panel counts the recording time on
  await until(() => /RECORDING episode 1 · [1-9]\d* s/.test(JSON.parse(window.teledora.scene.panel.content).episode.status));
  log('episode_recording', { episode: await episode(), shown: await panelEpisode() });
  log('episode_keep', { sent: await click('ep_keep') });
  await episodeIs(() => { const e = window.teledora.status.episode; return e && !e.open && e.kept === 1; });
  await click('ep_start');
  await episodeIs(() => { const e = window.teledora.status.episode; return e && e.open && e.number === 2; });
  log('discard_arm', { sent: await click('ep_discard') });
  await episodeIs(() => { const e = window.teledora.status.episode; return e && e.discard_armed; });
  // DISCARD is inactive while armed: a second click there sends nothing; only CONFIRM discards
  log('discard_again', { sent: await click('ep_discard'), episode: await episode(), shown: await panelEpisode() });
  log('discard_confirm', { sent: await click('ep_confirm') });
  await episodeIs(() => { const e = window.teledora.status.episode; return e && !e.open && e.discarded === 1; });
  log('episode_discarded', { episode: await episode(), shown: await panelEpisode(),
    acts: await page.evaluate(() => window.teledora.scene.acts.filter((a) => a.name.startsWith('ep_'))) });

  // the flat page's E-STOP still works (a DOM click: the IWER view covers the page)
  await page.dispatchEvent('#estop', 'click');
  await latchedIs(true);
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
