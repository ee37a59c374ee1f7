// Runs the heads-up line's rules (nodes/xr/web/hud.js) outside a browser for
// test_hud_logic.py: one JSON request a line on stdin, one JSON answer a line out.
//   {"model": {...hudModel args}}                  -> hudModel(args)
//   {"ages": [[age_ms, t_ms], ...]}                -> LinkAge.value() after each sample
//   {"contrast": [colour, colour]}                 -> the WCAG contrast ratio
//   {"tones": true}                                -> TONES, DETAIL, RECORDING, FRAME, BACKGROUNDS
import { createInterface } from 'node:readline';
import { BACKGROUNDS, contrast, DETAIL, FRAME, hudModel, LinkAge, RECORDING, TONES } from '../../nodes/xr/web/hud.js';

for await (const line of createInterface({ input: process.stdin })) {
  const req = JSON.parse(line);
  let out;
  if (req.model) out = hudModel(req.model);
  else if (req.ages) {
    const age = new LinkAge();
    out = req.ages.map(([a, t]) => { age.sample(a, t); return age.value(); });
  } else if (req.contrast) out = contrast(...req.contrast);
  else out = { TONES, DETAIL, RECORDING, FRAME, BACKGROUNDS };
  console.log(JSON.stringify(out));
}
