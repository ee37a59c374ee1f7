// Which of the page's controls may act, why not, and whether the page's E-STOP was
// acknowledged (docs/xr.md, "What the page shows"). Pure: no DOM, no socket; the
// caller passes the time, so the rules can be tested outside a browser.

// A press not acknowledged this long after it is shown as not acknowledged: the
// robot's teleop latches within milliseconds on a sound link, and the heads-up
// line calls the link lost at the same age.
export const ACK_TIMEOUT_MS = 1000;

export const REASONS = {
  tokenMissing: 'pairing token missing: open the address the robot printed',
  tokenWrong: 'pairing token wrong: open the address the robot printed',
  notPaired: 'not paired: open the address the robot printed',
  linkLost: 'link lost: reconnecting…',
  noClock: 'not paired yet: waiting for the robot’s first clock ping',
  noVR: 'WebXR immersive-vr is not available in this browser',
};

// Why the controls cannot act now ('' when they can).
// link: {hasToken, paired, clocked (a ping answered: frames can go), everPaired, refusedCode, refusedText}
export function linkReason(link) {
  if (!link.hasToken) return REASONS.tokenMissing;
  if (link.refusedCode === 'bad_token') return REASONS.tokenWrong;
  if (link.refusedCode) return `not paired: ${link.refusedText || link.refusedCode}`;
  if (link.paired) return link.clocked ? '' : REASONS.noClock;
  return link.everPaired ? REASONS.linkLost : REASONS.notPaired;
}

// The flat page's buttons: enabled or not, and the reason shown beside them.
// state: the newest teleop state (or null); vrSupported: whether immersive-vr can be asked for.
export function pageControls(link, state, vrSupported) {
  const reason = linkReason(link);
  const live = reason === '';
  const s = state || null;
  return {
    reason,
    enabled: {
      estop: live,
      pause: live,
      // the confirming step is a different button from the arming one, so a double click cannot
      // release; with no state yet both steps stay offered (the page cannot know which is due)
      release: live && (!s || (!!s.estop_latched && !s.release_armed)),
      confirm: live,
      enter: live && vrSupported,
    },
    enterReason: reason || (vrSupported ? '' : REASONS.noVR),
    confirmHidden: !!s && !(s.estop_latched && s.release_armed),
  };
}

// The page E-STOP's acknowledgement. A press is acknowledged by a teleop state that has
// applied the page frame carrying it (page_seq at or past that frame's seq) and has the
// stop latched: the node latched the stop after the press. It says nothing about the motors.
export class StopAck {
  constructor(timeoutMs = ACK_TIMEOUT_MS) {
    this.timeoutMs = timeoutMs;
    this.phase = 'idle';  // idle | sent | acked
    this.pressSeq = null;
    this.pressedAt = 0;
    this.ackMs = null;
  }

  // a press sent in the page frame `seq` (null: no frame could carry it) at page time `now` (ms)
  press(seq, now) {
    this.phase = 'sent';
    this.pressSeq = seq;
    this.pressedAt = now;
    this.ackMs = null;
  }

  onState(state, now) {
    if (this.phase === 'idle' || this.pressSeq === null) return;
    const seq = state && state.page_seq;
    if (!Number.isInteger(seq) || seq < this.pressSeq) return;  // not yet past the press
    if (state.estop_latched && this.phase === 'sent') {
      this.phase = 'acked';
      this.ackMs = now - this.pressedAt;
    } else if (!state.estop_latched && this.phase === 'acked') {
      this.phase = 'idle';  // released since: the button is a plain stop again
    }
  }

  // what the button and the line beside it say at page time `now`
  view(now) {
    if (this.phase === 'idle') return { phase: 'idle', label: 'E-STOP', detail: '' };
    if (this.phase === 'acked') {
      return { phase: 'acked', label: 'STOP LATCHED (acknowledged)',
        detail: `teleop latched the stop ${Math.round(this.ackMs)} ms after the press (the node’s latch, not a check of the motors)` };
    }
    if (this.pressSeq !== null && now - this.pressedAt <= this.timeoutMs) {
      return { phase: 'sent', label: 'E-STOP sent…', detail: 'waiting for the robot to acknowledge' };
    }
    return { phase: 'unacked', label: 'NOT ACKNOWLEDGED — use the physical stop',
      detail: this.pressSeq === null ? 'the press could not be sent'
        : `no acknowledgement within ${this.timeoutMs} ms of the press` };
  }
}
