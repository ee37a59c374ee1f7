// What an operator does in VR, as playwright calls on the teleop page with IWER:
// squeeze the grips, point the right controller's ray at a panel button, pull and
// let go of its trigger. Shared by the e2e driver and the e-stop latency trials.

export function sceneControls(page, timeout) {
  const dev = (fn, arg) => page.evaluate(fn, arg);
  const until = (pred, arg) => page.waitForFunction(pred, arg, { timeout });
  const frames = async (n) => {
    const start = await page.evaluate(() => window.teledora.status.framesSent);
    await until((s) => window.teledora.status.framesSent >= s, start + n);
  };
  const state = () => page.evaluate(() => window.teledora.status.state);
  const latchedIs = (v) => until((want) => { const s = window.teledora.status.state; return s && s.estop_latched === want; }, v);
  const armedIs = (v) => until((want) => { const s = window.teledora.status.state; return s && s.release_armed === want; }, v);
  const pausedIs = (v) => until((want) => { const s = window.teledora.status.state; return s && s.arms_paused === want; }, v);
  const squeeze = (hands, v) => dev(([hs, val]) => {
    for (const h of hs) window.teledora.emulator.controllers[h].updateButtonValue('squeeze', val);
  }, [hands, v]);
  // turn the right controller so its target ray (-z) points at a panel button's centre
  const aim = (name) => dev((button) => {
    const c = window.teledora.emulator.controllers.right, t = window.teledora.scene.panel.buttonCenter(button);
    const d = [t[0] - c.position.x, t[1] - c.position.y, t[2] - c.position.z];
    const n = Math.hypot(...d), f = d.map((x) => x / n);
    const ax = f[1], ay = -f[0], w = 1 - f[2];  // (0, 0, -1) x f, and 1 + (0, 0, -1) . f
    const q = Math.hypot(ax, ay, w);
    c.quaternion.set(ax / q, ay / q, 0, w / q);
  }, name);
  const hovered = (name) => until((want) => window.teledora.scene.hover.right === want, name);
  const trigger = (v) => dev((val) => window.teledora.emulator.controllers.right.updateButtonValue('trigger', val), v);
  const acts = () => page.evaluate(() => window.teledora.scene.acts.length);
  // press and let go of the trigger over a button; how many actions the page took
  const click = async (name) => {
    await aim(name);
    await hovered(name);
    const before = await acts();
    await trigger(1);
    await frames(3);
    await trigger(0);
    await frames(3);
    return (await acts()) - before;
  };
  // the first time the scene showed the e-stop latched after page time t (ms)
  const shownLatchedAfter = (t) => until((since) => window.teledora.scene.shown.find((x) => x.latched && x.t >= since), t)
    .then((h) => h.jsonValue());
  // the page's E-STOP level stays up 300 ms after a press; a release step is refused meanwhile
  const afterStopLevel = (t) => until((since) => performance.now() > since + 400, t);
  return { dev, until, frames, state, latchedIs, armedIs, pausedIs, squeeze, aim, hovered, trigger, acts, click,
    shownLatchedAfter, afterStopLevel };
}
