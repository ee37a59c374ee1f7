// What the heads-up line says and how it looks, per state (docs/xr.md, "The heads-up
// line"). Pure: no DOM, no WebGL; the caller passes the time. Every state is named in
// words and marked by a shape (glyph, frame style); the colours only add to them, differ
// from one state to the next, and keep WCAG contrast: text against its fill >= 4.5, the
// white frame against any scene background >= 3.

// Fill, text colour and glyph of the first row, by the state that matters most.
// Glyphs are shapes the HUD draws: octagon (stop), bars (pause), ring (live),
// cross (link lost), question (not paired, state unknown).
export const TONES = {
  notPaired: { fill: '#0d47a1', text: '#ffffff', glyph: 'question', frame: 'dashed' },
  linkLost: { fill: '#37474f', text: '#ffffff', glyph: 'cross', frame: 'dashed' },
  unknown: { fill: '#37474f', text: '#ffffff', glyph: 'question', frame: 'dashed' },
  latched: { fill: '#b71c1c', text: '#ffffff', glyph: 'octagon', frame: 'double' },
  paused: { fill: '#ffb300', text: '#000000', glyph: 'bars', frame: 'solid' },
  live: { fill: '#1b5e20', text: '#ffffff', glyph: 'ring', frame: 'solid' },
};
// the second row: details on a dark fill; a recording is its own chip (dot glyph)
export const DETAIL = { fill: '#101418', text: '#f0f0f0' };
export const RECORDING = { fill: '#6a1b9a', text: '#ffffff', glyph: 'dot' };
export const FRAME = '#ffffff';
// The scene behind the panels: dark in every state (a tint only), so the white frame
// stands out whatever the state; the state is read from the HUD, not from this colour.
export const BACKGROUNDS = {
  notPaired: [0.03, 0.05, 0.16], linkLost: [0.08, 0.08, 0.09], unknown: [0.08, 0.08, 0.09],
  latched: [0.22, 0.02, 0.02], paused: [0.16, 0.11, 0.0], live: [0.06, 0.09, 0.08],
};

export const LINK_LOST_MS = 1000;   // no teleop state for this long: the link is called lost
export const AGE_WINDOW_MS = 1000;  // the shown link age is the mean over this window
export const AGE_ROUND_MS = 10;

// The link age, smoothed: teleop sends its state every 0.1 s, so the raw age is a saw
// tooth from 0 to 100 ms; its mean over the last second is steady (a median of the
// few values a frame rate samples from the tooth jumps between them). Whether the link
// is lost is judged on the raw age, never on the smoothed one.
export class LinkAge {
  constructor() { this.samples = []; }  // [t_ms, age_ms], oldest first

  sample(ageMs, now) {
    this.samples.push([now, ageMs]);
    while (this.samples.length && this.samples[0][0] < now - AGE_WINDOW_MS) this.samples.shift();
  }

  // the mean of the window's ages, rounded to AGE_ROUND_MS; null before any sample
  value() {
    if (!this.samples.length) return null;
    const mean = this.samples.reduce((sum, s) => sum + s[1], 0) / this.samples.length;
    return Math.round(mean / AGE_ROUND_MS) * AGE_ROUND_MS;
  }
}

// The HUD's two rows. why: linkReason() ('' when paired); state: teleop state or null;
// episode: episodes state (or null when unknown); rawAgeMs: time since the last state;
// smoothAgeMs: LinkAge.value(); ackLabel: the E-STOP acknowledgement's pending label, or ''.
export function hudModel({ why, state, episode, rawAgeMs, smoothAgeMs, ackLabel = '' }) {
  let key, title;
  const s = state || {};
  if (why) {
    const [head, ...rest] = why.split(':');
    key = head.startsWith('link lost') ? 'linkLost' : 'notPaired';
    title = head.toUpperCase();
    const detail = rest.join(':').trim();
    return row(key, title, detail ? [detail] : [], null);
  }
  if (!state) return row('unknown', 'ROBOT STATE UNKNOWN', ['no teleop state received'], null);
  const lost = rawAgeMs > LINK_LOST_MS;
  if (lost) key = 'linkLost';
  else if (s.estop_latched) key = 'latched';
  else if (s.arms_paused) key = 'paused';
  else key = 'live';
  const words = [];
  if (lost) words.push(`LINK LOST (${(rawAgeMs / 1000).toFixed(1)} s)`);
  // the stop and pause are named even when a graver state leads the row
  words.push(s.estop_latched ? 'E-STOP LATCHED' : (s.arms_paused ? 'ARMS PAUSED' : 'ARMS LIVE'));
  if (s.estop_latched && s.arms_paused) words.push('PAUSED');
  if (s.release_armed) words.push('CONFIRM to release');
  // who drives (teleop's selector); a state from before the field is the operator's
  const driving = driverWords(s);
  if (driving !== 'OPERATOR DRIVING' && !s.estop_latched) words.push(driving);
  title = (ackLabel ? [ackLabel, ...words] : words).join(' · ');
  const details = [driving];
  const clutch = [s.left_clutched ? 'L' : '', s.right_clutched ? 'R' : ''].join('');
  const slow = [s.left_slow ? 'L' : '', s.right_slow ? 'R' : ''].join('');
  details.push(clutch ? `CLUTCH ${clutch}` : 'no clutch');
  details.push(slow ? `SLOW ${slow}` : 'full speed');
  details.push(lost ? 'link: none for over 1 s' : `link ${smoothAgeMs === null ? '–' : smoothAgeMs} ms`);
  return row(key, title, details, recordingChip(episode));
}

export function driverWords(s) {
  if (s.driver === 'policy') return 'POLICY DRIVING';
  if (s.driver === 'stopped') return s.estop_latched ? 'NOBODY DRIVING' : 'POLICY STALE: HOLDING';
  return 'OPERATOR DRIVING';
}

function recordingChip(e) {
  if (!e) return { text: 'episode state unknown', recording: false };
  if (!e.open) return { text: 'not recording', recording: false };
  return { text: `REC episode ${e.number} · ${e.seconds} s`, recording: true };
}

function row(key, title, details, chip) {
  return { key, title, details: details.join(' · '), chip, tone: TONES[key], background: BACKGROUNDS[key],
    alarm: key !== 'live' && key !== 'paused' };
}

// WCAG 2 relative luminance and contrast ratio of '#rrggbb' or [r, g, b] (0-255) colours.
export function luminance(c) {
  const rgb = typeof c === 'string' ? [1, 3, 5].map((i) => parseInt(c.slice(i, i + 2), 16)) : c;
  const lin = rgb.map((v) => { const x = v / 255; return x <= 0.04045 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; });
  return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
}

export function contrast(a, b) {
  const la = luminance(a), lb = luminance(b);
  return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
}
