// Screenshot of the Rerun web viewer in headless Chromium (docs/viewing.md).
//   node tests/browser/rerun_screenshot.mjs URL OUT.png [WAIT_MS]
// URL: the page `rerun --serve-web FILE.rrd` prints. WebGL runs on Chromium's
// software rasteriser (SwiftShader); the wait lets the viewer load and draw.
import { chromium } from 'playwright-core';

const [url, out, wait = '20000'] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--use-angle=swiftshader', '--enable-unsafe-swiftshader', '--ignore-gpu-blocklist', '--no-sandbox'],
});
const page = await browser.newPage({ viewport: { width: 1600, height: 900 } });
page.on('console', (m) => { if (m.type() === 'error') console.error('page:', m.text()); });
await page.goto(url);
await page.waitForTimeout(Number(wait));
await page.screenshot({ path: out, timeout: 120000 });
await browser.close();
console.log(`wrote ${out}`);
