// What the teleop page's flat controls offer in each link state, in headless Chromium:
// refused for a missing token, refused for a wrong one, paired (E-STOP pressed with its
// frames lost on the way, then pressed for real), refused as a second page, link lost.
// Usage: node page_controls.mjs BASE_URL TOKEN
// Prints one JSON line per step; exits non-zero on failure.
import { chromium } from 'playwright-core';

const [base, token] = process.argv.slice(2);
const log = (step, extra = {}) => console.log(JSON.stringify({ step, ...extra }));
const timeout = 20000;
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});

// Stands in for the network: once `window.__netDown`, new sockets go nowhere; with
// `window.__dropFrames`, the page's feed frames are lost on the way (pings still answered).
function network() {
  const Real = window.WebSocket;
  window.__sockets = [];
  window.WebSocket = class extends Real {
    constructor(url, ...rest) {
      super(window.__netDown ? 'wss://127.0.0.1:9/ws' : url, ...rest);
      window.__sockets.push(this);
    }
    send(data) {
      if (window.__dropFrames && typeof data === 'string' && data.includes('"hands"')) return;
      super.send(data);
    }
  };
}

// every control as the DOM has it: disabled attribute, the look of it, its label and title
const snapshot = (page) => page.evaluate(() => {
  const controls = {};
  for (const id of ['estop', 'pause', 'release', 'confirm', 'enter']) {
    const b = document.getElementById(id), cs = getComputedStyle(b);
    controls[id] = { disabled: b.disabled, attr: b.hasAttribute('disabled'), cursor: cs.cursor,
      hatched: cs.backgroundImage.includes('repeating-linear-gradient'), label: b.textContent, title: b.title,
      hidden: b.hidden };
  }
  return { controls, reason: document.getElementById('controls_reason').textContent,
    ack: document.getElementById('estop_ack').textContent, link: document.getElementById('link').textContent };
});

// Enter VR, asked for by a click (refused while disabled: nothing happens) and by the page's own
// entry point (refused with the reason); either way no XR session
async function enterVR(page) {
  await page.dispatchEvent('#enter', 'click');
  const error = await page.evaluate(() => window.teledora.enterVR().then(() => '', (e) => e.message));
  return { error, inVR: await page.evaluate(() => window.teledora.status.inVR), link: await page.textContent('#link') };
}

async function refusedPage(url) {
  const context = await browser.newContext({ ignoreHTTPSErrors: true });
  const page = await context.newPage();
  await page.goto(url);
  await page.waitForFunction(() => window.teledora && window.teledora.status.refusedCode, null, { timeout });
  const shown = await snapshot(page);
  const vr = await enterVR(page);
  const sent = await page.evaluate(() => window.teledora.status.framesSent);
  await context.close();
  return { ...shown, vr, sent };
}

try {
  log('missing_token', await refusedPage(`${base}/?emulate=1`));
  log('wrong_token', await refusedPage(`${base}/?token=wrong&emulate=1`));

  const context = await browser.newContext({ ignoreHTTPSErrors: true });
  await context.addInitScript(network);
  const page = await context.newPage();
  page.on('pageerror', (e) => log('page_error', { message: e.message }));
  await page.goto(`${base}/?token=${token}&emulate=1`);
  await page.waitForFunction(() => window.teledora && window.teledora.status.paired && window.teledora.status.pongs > 0
    && window.teledora.status.state, null, { timeout });
  log('paired', await snapshot(page));

  // a press whose frames never reach the node: sent, then the warning
  await page.evaluate(() => { window.__dropFrames = true; });
  const lost = await page.evaluate(() => { document.getElementById('estop').click(); return document.getElementById('estop').textContent; });
  await page.waitForFunction(() => window.teledora.stopAck.view(performance.now()).phase === 'unacked', null, { timeout });
  await page.waitForFunction(() => document.getElementById('estop').textContent.startsWith('NOT ACKNOWLEDGED'), null, { timeout });
  log('lost_press', { label_at_press: lost, ...(await snapshot(page)),
    latched: await page.evaluate(() => !!window.teledora.status.state.estop_latched) });
  await page.evaluate(() => { window.__dropFrames = false; });

  // a press that arrives: sent, then acknowledged by teleop's latched state
  const pressed = await page.evaluate(() => { document.getElementById('estop').click(); return document.getElementById('estop').textContent; });
  await page.waitForFunction(() => document.getElementById('estop').textContent === 'STOP LATCHED (acknowledged)', null, { timeout });
  log('acknowledged', { label_at_press: pressed, ...(await snapshot(page)),
    press_seq: await page.evaluate(() => window.teledora.stopAck.pressSeq),
    state: await page.evaluate(() => window.teledora.status.state) });

  // a second page with the right token while this one is in control
  const other = await browser.newContext({ ignoreHTTPSErrors: true });
  const second = await other.newPage();
  await second.goto(`${base}/?token=${token}&emulate=1`);
  await second.waitForFunction(() => window.teledora && window.teledora.status.refusedCode, null, { timeout });
  log('busy', { ...(await snapshot(second)), vr: await enterVR(second) });
  await other.close();

  // the link goes: the socket closes and no new one gets through
  await page.evaluate(() => { window.__netDown = true; for (const s of window.__sockets) s.close(); });
  await page.waitForFunction(() => !window.teledora.status.paired, null, { timeout });
  log('link_lost', { ...(await snapshot(page)), vr: await enterVR(page) });
  await page.close();
  log('done');
} catch (e) {
  log('failed', { message: String(e && e.message || e) });
  process.exitCode = 1;
} finally {
  await Promise.race([browser.close(), new Promise((r) => setTimeout(r, 2000))]);
  process.exit(process.exitCode || 0);
}
