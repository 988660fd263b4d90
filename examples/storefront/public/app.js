// The storefront's page: pick, hold, countdown, extend, pay, late payment. No framework; it
// talks JSON to server.js, which talks to slotd. One purchase attempt at a time: its id is
// made here when "Hold tickets" is pressed and sent with every step, so a step resent after a
// lost reply is the same step (the server keeps the attempt's idempotency key).

const $ = (id) => document.getElementById(id);
const panel = $('panel');

/** The page's state. */
const st = {
  events: [],          // the event views from /api/events
  picked: null,        // the event name picked
  attempt: null,       // the attempt's last view from the server
  deadline: null,      // performance.now() at which the hold expires (the page's own clock)
  ttlMs: 0,            // the hold's time at the start of its countdown (for the bar)
  timer: null,         // the countdown's interval
  lastCall: null,      // the last call, for "Try again"
};

/** How many expiry checks after the countdown ends before the page believes what it is told. */
const EXPIRY_CHECKS_MAX = 20;

function newAttemptId() {
  if (crypto.randomUUID) return crypto.randomUUID();
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');
}

function tickets(n) { return n === 1 ? '1 ticket' : `${n} tickets`; }

function show(state) {
  panel.dataset.state = state;
}

function showError(body, retry) {
  $('error').hidden = false;
  $('error-title').textContent = body.error === 'network' ? 'The shop cannot be reached' : `Error: ${body.error}`;
  $('error-text').textContent = body.message || '';
  $('retry').hidden = !retry;
  st.lastCall = retry || null;
}

function clearError() {
  $('error').hidden = true;
  st.lastCall = null;
}

/** Calls the storefront's API; resolves to the reply body, or throws {error, message}. */
async function api(method, url, body) {
  let res;
  try {
    res = await fetch(url, {
      method,
      headers: body ? { 'Content-Type': 'application/json' } : {},
      body: body ? JSON.stringify(body) : undefined,
    });
  } catch (err) {
    throw { error: 'network', message: 'No answer from the shop. Nothing changed that you were not told about; try again.' };
  }
  let data;
  try {
    data = await res.json();
  } catch {
    throw { error: 'bad_reply', message: `The shop answered HTTP ${res.status} without JSON.` };
  }
  if (!res.ok || data.ok === false) throw data;
  return data;
}

// ---- the event list -------------------------------------------------------------------------

async function loadEvents() {
  try {
    const r = await api('GET', '/api/events');
    st.events = r.events;
    renderEvents();
  } catch (err) {
    // after a failed step its error (and its Try again) stays; the list is refreshed later
    if ($('error').hidden) showError(err, () => loadEvents());
  }
}

function renderEvents() {
  const ul = $('events');
  ul.replaceChildren();
  for (const ev of st.events) {
    const li = document.createElement('li');
    li.className = 'event';
    li.dataset.event = ev.event;
    li.setAttribute('role', 'radio');
    li.tabIndex = 0;
    const name = document.createElement('span');
    name.className = 'name';
    name.textContent = ev.event;
    const left = document.createElement('span');
    left.className = 'left';
    if (ev.error) {
      left.textContent = ev.message;
      li.classList.add('soldout');
    } else if (ev.status !== 'on_sale') {
      left.textContent = 'Not on sale';
      li.classList.add('soldout');
    } else if (ev.available === 0) {
      left.textContent = 'Sold out';
      li.classList.add('soldout');
    } else {
      left.textContent = `${ev.available} of ${ev.capacity} left`;
    }
    const meter = document.createElement('div');
    meter.className = 'meter';
    const fill = document.createElement('div');
    fill.style.width = ev.capacity > 0 ? `${Math.round((100 * (ev.available || 0)) / ev.capacity)}%` : '0%';
    meter.append(fill);
    li.append(left, name, meter);
    li.setAttribute('aria-checked', String(st.picked === ev.event));
    li.addEventListener('click', () => pick(ev.event));
    li.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') pick(ev.event); });
    ul.append(li);
  }
  if (!st.picked) {
    const first = st.events.find((e) => !e.error && e.status === 'on_sale' && e.available > 0);
    if (first) pick(first.event);
  } else {
    renderQty();
  }
}

function pick(name) {
  st.picked = name;
  for (const li of $('events').children) li.setAttribute('aria-checked', String(li.dataset.event === name));
  renderQty();
}

function renderQty() {
  const ev = st.events.find((e) => e.event === st.picked);
  const sel = $('qty');
  const was = Number(sel.value) || 1;
  sel.replaceChildren();
  const max = ev && ev.qty_max ? ev.qty_max : 1;
  for (let q = 1; q <= max; q++) {
    const o = document.createElement('option');
    o.value = String(q);
    o.textContent = String(q);
    sel.append(o);
  }
  sel.value = String(Math.min(was, max));
  const busy = st.attempt && st.attempt.state === 'held';
  $('hold').disabled = !ev || !!ev.error || ev.status !== 'on_sale' || ev.available === 0 || busy;
}

// ---- the purchase -------------------------------------------------------------------------

/** Shows the attempt's view from the server. */
function render(a) {
  st.attempt = a;
  stopCountdown();
  if (a.state === 'held') {
    $('held-what').textContent = `${tickets(a.qty)} for ${a.event}`;
    const ev = st.events.find((e) => e.event === a.event);
    const maxExt = a.max_extensions ?? (ev ? ev.max_extensions : 0);
    const left = Math.max(0, maxExt - a.extensions);
    $('extend').textContent = left > 0 ? `Extend (${left} left)` : 'No more extensions';
    $('extend').disabled = left === 0;
    $('until').textContent = new Date(a.expires_at).toLocaleTimeString();
    startCountdown(a.remaining_ms, ev ? ev.hold_ttl_ms : a.remaining_ms);
  } else if (a.state === 'confirmed') {
    $('ok-what').textContent = `${tickets(a.qty)} for ${a.event}`;
    $('ok-hold').textContent = a.hold;
    $('ok-card').textContent = a.paid ? `•••• ${a.paid.last4}, charged` : 'charged';
    $('ok-replaces-dt').hidden = $('ok-replaces').hidden = !a.replaces;
    $('ok-replaces').textContent = a.replaces ? `new hold, in place of the expired ${a.replaces}` : '';
  } else if (a.state === 'sold_out') {
    const n = a.available ?? 0;
    $('sold-text').textContent = n === 0
      ? `Every ticket for ${a.event} is taken. Nothing was charged.`
      : `Only ${tickets(n)} left for ${a.event}; you asked for ${a.qty}. Nothing was charged.`;
  } else if (a.state === 'expired') {
    const at = a.expires_at ? ` at ${new Date(a.expires_at).toLocaleTimeString()}` : '';
    $('expired-text').textContent = `The ${tickets(a.qty)} for ${a.event} went back on sale${at}.`;
  }
  show(a.state === 'new' ? 'idle' : a.state);
  renderQty();
}

function startCountdown(remainingMs, ttlMs) {
  st.deadline = performance.now() + remainingMs;
  st.ttlMs = Math.max(remainingMs, ttlMs || 0, 1);
  const tick = () => {
    const left = Math.max(0, st.deadline - performance.now());
    const s = Math.ceil(left / 1000);
    $('countdown').textContent = `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
    const low = left < 30000 && left < st.ttlMs / 3;
    $('countdown').classList.toggle('low', low);
    $('bar-fill').classList.toggle('low', low);
    $('bar-fill').style.width = `${Math.min(100, (100 * left) / st.ttlMs)}%`;
    if (left === 0) {
      stopCountdown();
      checkExpiry(0);
    }
  };
  tick();
  st.timer = setInterval(tick, 250);
}

function stopCountdown() {
  if (st.timer) clearInterval(st.timer);
  st.timer = null;
}

/** The countdown ended: ask the server what the hold is now (expired, unless a clock is off). */
async function checkExpiry(n) {
  const a = st.attempt;
  if (!a || a.state !== 'held') return;
  try {
    const r = await api('GET', `/api/attempt?attempt=${encodeURIComponent(a.attempt)}`);
    if (st.attempt !== a) return;
    if (r.state === 'held' && n < EXPIRY_CHECKS_MAX) {
      setTimeout(() => checkExpiry(n + 1), 500);
      return;
    }
    render(r);
    loadEvents();
    // the event's count shows the units back once slotd's sweeper ran (within its interval,
    // 1 s by default, + 1 s): look again then
    setTimeout(loadEvents, 2500);
  } catch (err) {
    showError(err, () => checkExpiry(0));
  }
}

/** Runs one step of the attempt; a failed step can be tried again as it was. */
async function step(busyText, fn) {
  clearError();
  const prev = panel.dataset.state;
  const buttons = [...panel.querySelectorAll('button')];
  const was = buttons.map((b) => b.disabled);
  const restore = () => buttons.forEach((b, i) => { b.disabled = was[i]; });
  buttons.forEach((b) => { b.disabled = true; });
  if (prev === 'idle' || prev === 'sold_out' || prev === 'released') {
    $('busy-text').textContent = busyText;
    show('busy');
  }
  try {
    const r = await fn();
    restore();
    render(r);
    loadEvents();
    return r;
  } catch (err) {
    restore();
    if (panel.dataset.state === 'busy') show(prev);
    // the hold is no longer what the page showed (expired while paying, say): show what it is
    if (err.status && st.attempt && err.status !== st.attempt.state) render({ ...st.attempt, state: err.status });
    showError(err, () => step(busyText, fn));
    return null;
  }
}

$('pick').addEventListener('submit', async (e) => {
  e.preventDefault();
  const ev = st.picked;
  const qty = Number($('qty').value);
  if (!ev) return;
  const body = { attempt: newAttemptId(), event: ev, qty };
  await step(`Holding ${tickets(qty)} for ${ev}…`, () => api('POST', '/api/hold', body));
});

$('refresh').addEventListener('click', () => loadEvents());

$('extend').addEventListener('click', () => {
  const a = st.attempt;
  step('Extending…', () => api('POST', '/api/extend', { attempt: a.attempt }));
});

$('release').addEventListener('click', async () => {
  const a = st.attempt;
  await step('Giving the tickets back…', () => api('POST', '/api/release', { attempt: a.attempt }));
});

function payMessage(el, r) {
  el.hidden = !(r && r.payment && !r.payment.ok);
  if (!el.hidden) el.textContent = `Payment failed: ${r.payment.reason}.`;
}

$('pay-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const a = st.attempt;
  const card = $('card').value;
  $('pay-msg').hidden = true;
  const r = await step('Paying…', () => api('POST', '/api/pay', { attempt: a.attempt, card }));
  payMessage(r && r.state === 'expired' ? $('late-msg') : $('pay-msg'), r);
});

$('late-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const a = st.attempt;
  const card = $('late-card').value;
  $('late-msg').hidden = true;
  const r = await step('Paying…', () => api('POST', '/api/late-pay', { attempt: a.attempt, card }));
  payMessage($('late-msg'), r);
});

for (const b of document.querySelectorAll('button.again')) {
  b.addEventListener('click', () => {
    clearError();
    st.attempt = null;
    $('pay-msg').hidden = $('late-msg').hidden = true;
    $('card').value = $('late-card').value = '';
    show('idle');
    loadEvents();
  });
}

$('retry').addEventListener('click', () => {
  const again = st.lastCall;
  clearError();
  if (again) again();
});

loadEvents();
