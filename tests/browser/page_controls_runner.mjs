// Runs the page's control rules (nodes/xr/web/page_controls.js) outside a browser for
// test_page_controls_logic.py: one JSON request a line on stdin, one JSON answer a line out.
//   {"controls": [link, state, vrSupported]}        -> pageControls(...)
//   {"ack": [[op, arg, t_ms], ...], "timeout": ms}   -> the view after each op ("press" seq,
//                                                       "state" {page_seq, estop_latched}, "view")
import { createInterface } from 'node:readline';
import { pageControls, StopAck } from '../../nodes/xr/web/page_controls.js';

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  const req = JSON.parse(line);
  if (req.controls) {
    console.log(JSON.stringify(pageControls(...req.controls)));
    continue;
  }
  const ack = new StopAck(req.timeout);
  const views = [];
  for (const [op, arg, t] of req.ack) {
    if (op === 'press') ack.press(arg, t);
    else if (op === 'state') ack.onState(arg, t);
    views.push(ack.view(t));
  }
  console.log(JSON.stringify(views));
}
