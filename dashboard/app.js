// BuzzKit dashboard. No framework, no build step, no request to another host.
// The page holds no data: every view calls the same /v1 endpoints a backend calls, with the
// key the operator typed, kept in sessionStorage only. Every value from the server is put in
// the page as text (textContent / text nodes), never parsed as HTML.
'use strict';

const store = {
  get key() { return sessionStorage.getItem('buzzkit.key') || ''; },
  set key(v) { v ? sessionStorage.setItem('buzzkit.key', v) : sessionStorage.removeItem('buzzkit.key'); },
  get tenant() { return sessionStorage.getItem('buzzkit.tenant') || ''; },
  set tenant(v) { v ? sessionStorage.setItem('buzzkit.tenant', v) : sessionStorage.removeItem('buzzkit.tenant'); },
  // There is no "list tenants" endpoint: a workspace key's tenants are the ones created or
  // typed in this session.
  get tenants() {
    try { return JSON.parse(sessionStorage.getItem('buzzkit.tenants') || '[]'); } catch { return []; }
  },
  set tenants(list) { sessionStorage.setItem('buzzkit.tenants', JSON.stringify(list)); },
  clear() { sessionStorage.removeItem('buzzkit.key'); sessionStorage.removeItem('buzzkit.tenant'); sessionStorage.removeItem('buzzkit.tenants'); },
};

const isWorkspaceKey = () => store.key.startsWith('bk_ws_');

// MARK: - DOM helpers: text only

/** An element; string and number children become text nodes, never markup. */
function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'class') el.className = value;
    else if (name === 'text') el.textContent = String(value);
    else if (name.startsWith('on') && typeof value === 'function') el.addEventListener(name.slice(2), value);
    else if (name === 'value' || name === 'checked' || name === 'disabled') el[name] = value;
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  add(el, children);
  return el;
}

function add(el, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); return el; }

const $ = (id) => document.getElementById(id);

/** A link inside the page to a subscriber; the id only ever goes into the hash, encoded. */
function subscriberLink(id) {
  return h('a', { href: '#/subscriber/' + encodeURIComponent(id), class: 'mono', text: id });
}

function badge(kind, text) { return h('span', { class: 'badge ' + kind, text: text || kind }); }

function verifiedBadge(verified) {
  return verified ? badge('verified', '✓ verified') : badge('unverified', 'unverified');
}

function kindBadge(anonymous) { return anonymous ? badge('anonymous') : badge('identified'); }

function loading(text) { return h('p', { class: 'loading', role: 'status', text: text || 'Loading…' }); }

function errorBox(error) {
  const box = h('p', { class: 'error', role: 'alert' }, error.message || String(error));
  if (error.code) add(box, ' ', h('span', { class: 'mono small', text: '(' + error.code + ')' }));
  return box;
}

function time(value) {
  if (!value) return '—';
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return String(value);
  return date.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

function timeCell(value) { return h('td', { class: 'time', title: value || '', text: time(value) }); }

/** A JSON value as text: strings as they are, everything else as JSON. */
function show(value) { return typeof value === 'string' ? value : JSON.stringify(value); }

function table(headers, rows, emptyText) {
  if (rows.length === 0) return h('p', { class: 'muted', text: emptyText || 'None.' });
  return h('div', { class: 'table-wrap' },
    h('table', {},
      h('thead', {}, h('tr', {}, headers.map((name) => h('th', { scope: 'col', text: name })))),
      h('tbody', {}, rows)));
}

/** A secret shown once, with a copy button. */
function secretBox(label, value, id) {
  const code = h('code', { id: id, text: value });
  const status = h('span', { class: 'small muted', role: 'status' });
  const copy = h('button', {
    type: 'button', class: 'secondary', text: 'Copy',
    onclick: async () => {
      try {
        await navigator.clipboard.writeText(value);
        status.textContent = 'Copied.';
      } catch {
        // Without clipboard access (plain http on another host), select it for Ctrl+C.
        const range = document.createRange();
        range.selectNodeContents(code);
        const selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        status.textContent = 'Selected: press Ctrl+C (⌘C) to copy.';
      }
    },
  });
  return h('div', { class: 'field' }, h('span', { class: 'label', text: label }), h('div', { class: 'secret' }, code, copy, status));
}

// MARK: - The API

class APIError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

/** One /v1 call with the signed-in key; resolves to the envelope, rejects with its error. */
async function api(method, path, body, options) {
  const key = (options && options.key) || store.key;
  const headers = { Authorization: 'Bearer ' + key };
  const tenant = options && 'tenant' in options ? options.tenant : store.tenant;
  if (key.startsWith('bk_ws_') && tenant) headers['BuzzKit-Tenant'] = tenant;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let response;
  try {
    response = await fetch(path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store', credentials: 'omit', referrerPolicy: 'no-referrer',
    });
  } catch (error) {
    throw new APIError(0, 'network_error', 'The server could not be reached (' + error.message + ').');
  }
  let envelope = null;
  try { envelope = await response.json(); } catch { envelope = null; }
  if (response.ok && envelope && envelope.success === true) return envelope;
  const error = envelope && envelope.error;
  const failure = new APIError(
    response.status, (error && error.code) || 'http_' + response.status,
    (error && error.message) || 'The server answered HTTP ' + response.status + '.', error && error.details);
  if (response.status === 401 && failure.code === 'unauthorized' && !(options && options.key)) keyStoppedWorking();
  throw failure;
}

const enc = encodeURIComponent;

// MARK: - Sign-in, the key banner, the tenant switcher

function keyStoppedWorking() {
  const banner = $('banner');
  clear(banner);
  add(banner, 'This key no longer works: it was revoked, or it is not a key of this server. ',
    h('button', { type: 'button', class: 'secondary', text: 'Sign in again', onclick: signOut }));
  banner.hidden = false;
}

function signOut() {
  store.clear();
  $('banner').hidden = true;
  location.hash = '';
  showSignIn();
}

function showSignIn(message) {
  $('app').hidden = true;
  $('sign-out').hidden = true;
  $('tenant-switcher').hidden = true;
  $('tenant-label').textContent = '';
  $('signin').hidden = false;
  const error = $('signin-error');
  error.hidden = !message;
  error.textContent = message || '';
  $('signin-key').focus();
}

async function signIn(event) {
  event.preventDefault();
  const key = $('signin-key').value.trim();
  const error = $('signin-error');
  const button = $('signin-submit');
  error.hidden = true;
  button.disabled = true;
  button.textContent = 'Checking…';
  try {
    await checkKey(key);
    store.key = key;
    $('signin-key').value = '';
    $('banner').hidden = true;
    await enterApp();
  } catch (failure) {
    error.textContent = failure.message + (failure.code ? ' (' + failure.code + ')' : '');
    error.hidden = false;
  } finally {
    button.disabled = false;
    button.textContent = 'Sign in';
  }
}

/** Asks the server whether the key works, before keeping it. */
async function checkKey(key) {
  if (!key) throw new APIError(0, '', 'Type a key.');
  if (key.startsWith('bk_client_')) {
    throw new APIError(0, 'forbidden', 'A client key is public and app-only; sign in with a secret or workspace key.');
  }
  try {
    await api('GET', '/v1/tenant', undefined, { key, tenant: '' });
  } catch (failure) {
    // A workspace key without a tenant is refused as tenant_required: the key itself works.
    if (key.startsWith('bk_ws_') && failure.code === 'tenant_required') return;
    if (failure.status === 401) throw new APIError(401, failure.code, 'This key does not work here: ' + failure.message);
    throw failure;
  }
}

async function enterApp() {
  $('signin').hidden = true;
  $('app').hidden = false;
  $('sign-out').hidden = false;
  $('nav-tenants').hidden = !isWorkspaceKey();
  renderTenantSwitcher();
  if (!isWorkspaceKey()) {
    api('GET', '/v1/tenant').then((envelope) => {
      const tenant = envelope.data.tenant;
      $('tenant-label').textContent = tenant.name + ' · ' + tenant.id;
    }).catch(() => {});
  }
  if (isWorkspaceKey() && !store.tenant && location.hash !== '#/tenants') {
    location.hash = '#/tenants'; // routed by the hashchange
    return;
  }
  route();
}

function renderTenantSwitcher() {
  const form = $('tenant-switcher');
  if (!isWorkspaceKey()) { form.hidden = true; return; }
  form.hidden = false;
  const select = clear($('tenant-select'));
  add(select, h('option', { value: '', text: store.tenant ? 'Choose…' : 'No tenant chosen' }));
  for (const tenant of store.tenants) {
    add(select, h('option', { value: tenant.id, text: tenant.name + ' · ' + tenant.id }));
  }
  select.value = store.tenant;
  $('tenant-label').textContent = 'Workspace key';
}

function rememberTenant(tenant) {
  const list = store.tenants.filter((t) => t.id !== tenant.id);
  list.unshift({ id: tenant.id, name: tenant.name });
  store.tenants = list;
}

function useTenant(id) {
  store.tenant = id;
  renderTenantSwitcher();
  if (!id) { location.hash = '#/tenants'; return; }
  if (location.hash === '#/subscribers') route(); else location.hash = '#/subscribers';
}

// MARK: - Routing

const views = {
  subscribers: subscribersView,
  subscriber: subscriberView,
  verification: verificationView,
  settings: settingsView,
  secret: secretView,
  keys: keysView,
  webhooks: webhooksView,
  tenants: tenantsView,
};

let renderSerial = 0;

function route() {
  if (!store.key) { showSignIn(); return; }
  const [, name, ...rest] = (location.hash || '#/subscribers').split('/');
  const view = views[name] ? name : 'subscribers';
  let argument = rest.join('/');
  try { argument = decodeURIComponent(argument); } catch { /* a hand-typed, malformed %-escape: use it as typed */ }
  for (const link of document.querySelectorAll('nav.views a')) {
    const current = link.dataset.view === view || (view === 'subscriber' && link.dataset.view === 'subscribers');
    if (current) link.setAttribute('aria-current', 'page'); else link.removeAttribute('aria-current');
  }
  const main = clear($('view'));
  const serial = ++renderSerial;
  if (isWorkspaceKey() && !store.tenant && view !== 'tenants') {
    add(main, h('h1', { text: 'Choose a tenant' }),
      h('p', {}, 'A workspace key acts in one tenant at a time: ', h('a', { href: '#/tenants', text: 'create or choose one' }), '.'));
    return;
  }
  // A view is an async function that fills `main`; a newer navigation makes its late answers moot.
  const alive = () => serial === renderSerial;
  views[view](main, argument, alive).catch((error) => {
    if (!alive()) return;
    add(main, errorBox(error));
  });
  main.focus({ preventScroll: true });
}

// MARK: - Subscribers

const pageSize = 50;
const filters = {
  all: { label: 'All', query: '' },
  anonymous: { label: 'Anonymous', query: '&anonymous=true' },
  identified: { label: 'Identified', query: '&anonymous=false' },
  verified: { label: 'Verified', query: '&verified=true' },
};
// Where the list is, so coming back from a subscriber lands on the same page.
const listState = { filter: 'all', cursors: [''] };

async function subscribersView(main, _argument, alive) {
  add(main, h('h1', { text: 'Subscribers' }));

  const searchInput = h('input', { type: 'text', id: 'search-id', class: 'grow', placeholder: 'user_42, anon_…, any alias', spellcheck: 'false' });
  const searchError = h('div', { id: 'search-error' });
  const search = h('form', {
    class: 'panel row', role: 'search',
    onsubmit: (event) => {
      event.preventDefault();
      const id = searchInput.value.trim();
      clear(searchError);
      if (!id) { add(searchError, errorBox({ message: 'Type an id or alias.' })); return; }
      location.hash = '#/subscriber/' + enc(id);
    },
  }, h('label', { for: 'search-id', text: 'Find by id or alias' }), searchInput, h('button', { type: 'submit', text: 'Find' }));
  add(main, search, searchError);

  const filterBar = h('div', { class: 'row', role: 'group', 'aria-label': 'Filter' },
    h('span', { class: 'muted', text: 'Show:' }),
    Object.entries(filters).map(([name, filter]) => h('button', {
      type: 'button', class: listState.filter === name ? '' : 'secondary', 'aria-pressed': String(listState.filter === name),
      'data-filter': name, text: filter.label,
      onclick: () => { listState.filter = name; listState.cursors = ['']; route(); },
    })));
  add(main, filterBar, h('p', { class: 'muted small', text: 'Newest first, ' + pageSize + ' a page.' }));

  const results = h('div', { id: 'subscriber-list' }, loading('Loading subscribers…'));
  add(main, results);
  const cursor = listState.cursors[listState.cursors.length - 1];
  const envelope = await api('GET', '/v1/subscribers?order=newest&limit=' + pageSize + filters[listState.filter].query + (cursor ? '&cursor=' + enc(cursor) : ''));
  if (!alive()) return;
  clear(results);
  const { subscribers, nextCursor } = envelope.data;
  add(results, table(['Id', 'Kind', 'Verified', 'Email', 'Events', 'Created'], subscribers.map((s) => h('tr', {},
    h('td', {}, subscriberLink(s.id)), h('td', {}, kindBadge(s.anonymous)), h('td', {}, verifiedBadge(s.verified)),
    h('td', { text: s.email || '—' }), h('td', { text: String(s.eventCount) }), timeCell(s.createdAt))),
  'No subscribers ' + (listState.filter === 'all' ? 'yet.' : 'match this filter on this page.')));
  const page = listState.cursors.length;
  add(results, h('div', { class: 'pager' },
    h('button', {
      type: 'button', class: 'secondary', text: '← Newer', disabled: page === 1,
      onclick: () => { listState.cursors.pop(); route(); },
    }),
    h('span', { class: 'muted', text: 'Page ' + page }),
    h('button', {
      type: 'button', class: 'secondary', text: 'Older →', disabled: !nextCursor,
      onclick: () => { listState.cursors.push(nextCursor); route(); },
    })));
}

// MARK: - One subscriber

async function subscriberView(main, id, alive) {
  add(main, h('p', {}, h('a', { href: '#/subscribers', text: '← Subscribers' })));
  const body = h('div', {}, loading('Loading ' + id + '…'));
  add(main, body);
  let envelope;
  try {
    envelope = await api('GET', '/v1/subscribers/' + enc(id));
  } catch (error) {
    if (!alive()) return;
    clear(body);
    if (error.code === 'subscriber_not_found') {
      add(body, h('h1', { text: 'Not found' }), errorBox({ message: 'No subscriber of this tenant has the id or alias "' + id + '".', code: error.code }));
      return;
    }
    throw error;
  }
  if (!alive()) return;
  const s = envelope.data.subscriber;
  clear(body);

  add(body, h('h1', { class: 'row' }, h('span', { class: 'mono', id: 'subscriber-id', text: s.id }), kindBadge(s.anonymous), h('span', { id: 'verified-badge' }, verifiedBadge(s.verified))));
  const resolvedFrom = envelope.metadata && envelope.metadata.resolvedFrom;
  if (resolvedFrom) add(body, h('p', { class: 'notice', id: 'resolved-from' }, 'Reached through alias ', h('code', { text: resolvedFrom }), '.'));

  const sources = s.attributeSources || {};
  const facts = h('dl', { class: 'facts' },
    h('dt', { text: 'Aliases' }), h('dd', { id: 'aliases' }, s.aliases.length ? h('ul', { class: 'plain' }, s.aliases.map((a) => h('li', { class: 'mono', text: a }))) : h('span', { class: 'muted', text: 'none' })),
    h('dt', { text: 'Email' }), h('dd', { text: s.email || '—' }),
    h('dt', { text: 'Email channel' }), h('dd', { text: s.channels && s.channels.email ? s.channels.email.address + (s.channels.email.subscribed ? ' · subscribed' : ' · not subscribed') : 'none' }),
    h('dt', { text: 'Events' }), h('dd', { text: String(s.eventCount) }),
    h('dt', { text: 'Created' }), h('dd', { title: s.createdAt, text: time(s.createdAt) }),
    h('dt', { text: 'Updated' }), h('dd', { title: s.updatedAt, text: time(s.updatedAt) }));
  add(body, h('section', { class: 'panel' }, facts));

  add(body, h('h2', { text: 'Attributes' }), table(['Key', 'Value', 'Set by'], Object.entries(s.attributes).map(([name, value]) => h('tr', { 'data-attribute': name },
    h('td', { class: 'mono', text: name }), h('td', { class: 'value', text: show(value) }),
    h('td', {}, sources[name] ? badge(sources[name], sources[name] === 'backend' ? 'backend' : 'app') : h('span', { class: 'muted', text: '—' })))), 'No attributes.'));

  const timeline = h('section', { id: 'timeline' }, loading('Loading timeline…'));
  add(body, h('h2', { text: 'Timeline' }), timeline);

  add(body, h('h2', { text: 'Push subscriptions' }), h('div', { id: 'push-subscriptions' }, table(['Device', 'Platform', 'Token', 'Registered', 'Updated'], s.pushSubscriptions.map((p) => h('tr', {},
    h('td', { class: 'mono', text: p.deviceId }), h('td', { text: p.platform }), h('td', { class: 'mono', text: p.token }), timeCell(p.createdAt), timeCell(p.updatedAt))), 'No push subscriptions.')));
  add(body, h('h2', { text: 'Devices' }), h('div', { id: 'devices' }, table(['Device', 'Platform', 'App', 'OS', 'Model', 'Locale', 'Time zone', 'Last seen'], s.devices.map((d) => h('tr', {},
    h('td', { class: 'mono', text: d.deviceId }), h('td', { text: d.platform || '—' }), h('td', { text: d.appVersion || '—' }), h('td', { text: d.osVersion || '—' }),
    h('td', { text: d.model || '—' }), h('td', { text: d.locale || '—' }), h('td', { text: d.timeZone || '—' }), timeCell(d.lastSeenAt))), 'No devices.')));
  add(body, h('h2', { text: 'Preferences' }), h('div', { id: 'preferences' }, table(['Topic', 'Subscribed', 'Chosen'], Object.entries(s.preferences).map(([topic, p]) => h('tr', {},
    h('td', { class: 'mono', text: topic }), h('td', { text: p.subscribed ? 'yes' : 'no' }), timeCell(p.updatedAt))), 'No topic choices.')));

  add(body, h('h2', { text: 'Merge an anonymous id into this person' }), mergeForm(s));
  add(body, h('h2', { text: 'Erase' }), eraseForm(s));

  await loadTimeline(timeline, s.id, 0, alive);
}

async function loadTimeline(section, id, after, alive) {
  const envelope = await api('GET', '/v1/subscribers/' + enc(id) + '/events?limit=200' + (after ? '&after=' + after : ''));
  if (!alive()) return;
  const { events, nextCursor } = envelope.data;
  let tbody = section.querySelector('tbody');
  if (!tbody) {
    clear(section);
    if (events.length === 0) { add(section, h('p', { class: 'muted', text: 'No events.' })); return; }
    tbody = h('tbody', {});
    add(section, h('div', { class: 'table-wrap' }, h('table', {},
      h('thead', {}, h('tr', {}, ['Seq', 'Event', 'Time', 'Properties'].map((name) => h('th', { scope: 'col', text: name })))), tbody)));
  }
  for (const event of events) add(tbody, eventRow(event));
  const more = section.querySelector('.more');
  if (more) more.remove();
  if (nextCursor !== null && nextCursor !== undefined) {
    const button = h('button', {
      type: 'button', class: 'secondary more', text: 'Later events',
      onclick: () => { button.disabled = true; loadTimeline(section, id, nextCursor, alive).catch((error) => add(section, errorBox(error))); },
    });
    add(section, button);
  }
}

function eventRow(event) {
  const p = event.properties || {};
  if (event.name === '$subscriber.merged') {
    return h('tr', { class: 'merge', 'data-event': event.name },
      h('td', { text: String(event.seq) }),
      h('td', {}, h('strong', { text: 'Merge' }), ' ', h('span', { class: 'badge identified', text: show(p.shape) })),
      timeCell(event.timestamp),
      h('td', {}, 'from ', h('code', { text: show(p.from) }), ' · ' + show(p.shape) + ' · ' + show(p.eventsMoved) + ' events moved'));
  }
  return h('tr', { 'data-event': event.name },
    h('td', { text: String(event.seq) }), h('td', { class: 'mono', text: event.name }), timeCell(event.timestamp),
    h('td', { class: 'value', text: Object.keys(p).length ? JSON.stringify(p) : '' }));
}

function mergeForm(s) {
  const wrap = h('div', { class: 'panel' });
  if (s.anonymous) {
    add(wrap, h('p', { class: 'muted', text: 'Only an identified person can take in an anonymous id; this subscriber is anonymous itself.' }));
    return wrap;
  }
  const input = h('input', { type: 'text', id: 'merge-anonymous-id', class: 'grow mono', placeholder: 'anon_…', spellcheck: 'false' });
  const result = h('div', { role: 'status' });
  const button = h('button', { type: 'submit', text: 'Merge' });
  add(wrap, h('form', {
    class: 'row',
    onsubmit: async (event) => {
      event.preventDefault();
      clear(result);
      const anonymousId = input.value.trim();
      if (!/^anon_[A-Za-z0-9_-]{21}$/.test(anonymousId)) {
        add(result, errorBox({ message: 'An anonymous id is anon_ followed by 21 letters, digits, _ or -.', code: 'invalid_anonymous_id' }));
        return;
      }
      button.disabled = true;
      add(result, loading('Merging…'));
      try {
        const envelope = await api('POST', '/v1/subscribers/' + enc(s.id) + '/merge', { anonymousId });
        const merge = envelope.data.merge || { shape: 'none' };
        clear(result);
        add(result, h('p', { class: 'notice' }, 'Merged ' + anonymousId + ' (' + merge.shape + ').'));
        setTimeout(route, 600);
      } catch (error) {
        clear(result);
        add(result, errorBox(error));
      } finally {
        button.disabled = false;
      }
    },
  }, h('label', { for: 'merge-anonymous-id', text: 'Anonymous id' }), input, button), result);
  return wrap;
}

function eraseForm(s) {
  const wrap = h('div', { class: 'panel' }, h('p', { text: 'Erases the person: the subscriber, every alias, events, push subscriptions, preferences and devices. This cannot be undone.' }));
  const start = h('button', {
    type: 'button', class: 'danger', id: 'erase-start', text: 'Erase ' + s.id + '…',
    onclick: () => { start.hidden = true; confirm.hidden = false; input.focus(); },
  });
  const input = h('input', { type: 'text', id: 'erase-confirm-id', class: 'grow mono', spellcheck: 'false', autocomplete: 'off' });
  const result = h('div', { role: 'status' });
  const go = h('button', { type: 'submit', class: 'danger', id: 'erase-confirm', text: 'Erase for good' });
  const confirm = h('form', {
    class: 'confirm', hidden: true,
    onsubmit: async (event) => {
      event.preventDefault();
      clear(result);
      if (input.value !== s.id) { add(result, errorBox({ message: 'Type the id exactly, ' + s.id + ', to erase.' })); return; }
      go.disabled = true;
      add(result, loading('Erasing…'));
      try {
        await api('DELETE', '/v1/subscribers/' + enc(s.id));
        listState.cursors = [''];
        location.hash = '#/subscribers';
      } catch (error) {
        clear(result);
        add(result, errorBox(error));
        go.disabled = false;
      }
    },
  },
  h('label', { for: 'erase-confirm-id' }, 'To erase ', h('code', { text: s.id }), ' and everything about them, type the id:'),
  h('div', { class: 'row' }, input, go, h('button', { type: 'button', class: 'secondary', text: 'Cancel', onclick: () => { confirm.hidden = true; start.hidden = false; start.focus(); } })),
  result);
  return add(wrap, start, confirm);
}

// MARK: - Verification

async function verificationView(main, _argument, alive) {
  add(main, h('h1', { text: 'Verification' }));
  const body = h('div', {}, loading());
  add(main, body);
  const tenant = (await api('GET', '/v1/tenant')).data.tenant;
  if (!alive()) return;
  clear(body);
  const stats = tenant.stats || {};
  const identified = Number(stats.identifiedSubscribers || 0);
  const verified = Number(stats.verifiedSubscribers || 0);
  const calls = Number(stats.unverifiedAppCalls24h || 0);
  const share = identified ? Math.round((verified / identified) * 100) : 0;

  add(body, h('p', { class: 'muted', text: 'Whether the app already sends proofs: the share of identified subscribers verified, and the app calls of the last 24 hours that came without one (counted since this server started).' }));
  add(body, h('div', { class: 'gauges' },
    h('div', { class: 'gauge' },
      h('div', { class: 'muted', text: 'Verified of identified subscribers' }),
      h('div', { class: 'figure', id: 'verified-share', text: identified ? share + '%' : '—' }),
      h('meter', { min: '0', max: String(Math.max(identified, 1)), value: String(verified), low: String(Math.max(identified, 1) * 0.5), high: String(Math.max(identified, 1) * 0.99), optimum: String(Math.max(identified, 1)), 'aria-label': 'verified share' }),
      h('div', { class: 'small', id: 'verified-counts', text: verified + ' verified of ' + identified + ' identified' })),
    h('div', { class: 'gauge' },
      h('div', { class: 'muted', text: 'Unverified app calls, last 24 hours' }),
      h('div', { class: 'figure ' + (calls === 0 ? 'good' : 'bad'), id: 'unverified-calls', text: String(calls) }),
      h('div', { class: 'small', text: calls === 0 ? 'Zero: every app call carried a proof.' : 'These calls would be refused once verification is required.' }))));

  const status = h('div', { role: 'status', id: 'require-status' });
  const toggle = h('input', { type: 'checkbox', id: 'require-verification', checked: tenant.requireVerification });
  toggle.addEventListener('change', async () => {
    const wanted = toggle.checked;
    toggle.disabled = true;
    clear(status);
    add(status, loading('Saving…'));
    try {
      const next = (await api('PATCH', '/v1/tenant', { requireVerification: wanted })).data.tenant;
      toggle.checked = next.requireVerification;
      clear(status);
      add(status, h('p', { class: 'notice', text: next.requireVerification ? 'Verification is required: app calls without a valid proof are refused.' : 'Verification is not required: app calls without a proof are counted, not refused.' }));
    } catch (error) {
      toggle.checked = !wanted;
      clear(status);
      add(status, errorBox(error));
    } finally {
      toggle.disabled = false;
    }
  });
  const advice = calls > 0 ? h('p', { class: 'warn', text: calls + ' unverified app call(s) in the last 24 hours: enforcing now would refuse them.' })
    : h('p', { class: 'notice', text: 'No unverified app calls in the last 24 hours.' });
  add(body, h('section', { class: 'panel enforce' },
    h('div', { class: 'check' }, toggle, h('label', { for: 'require-verification' }, h('strong', { text: 'Require verification' }), h('span', { class: 'hint', text: ' Every app call that names an external id needs an identity hash or token.' }))),
    h('p', { class: 'rule', text: 'Ship proofs first, watch this reach zero, then enforce.' }),
    advice, status,
    h('button', { type: 'button', class: 'secondary', text: 'Refresh', onclick: route })));
}

// MARK: - Settings

const limitsRange = [1, 1000000];

/** The tenant's settings form, checked as the API checks them, with the API's wording. */
async function settingsView(main, _argument, alive) {
  add(main, h('h1', { text: 'Settings' }));
  const body = h('div', {}, loading());
  add(main, body);
  const tenant = (await api('GET', '/v1/tenant')).data.tenant;
  if (!alive()) return;
  clear(body);
  add(body, h('p', { class: 'muted' }, 'Tenant ', h('strong', { text: tenant.name }), ' · ', h('code', { text: tenant.id })));

  const checkbox = (name, label, hint) => h('div', { class: 'field check' },
    h('input', { type: 'checkbox', id: 'setting-' + name, name, checked: tenant[name] === true }),
    h('label', { for: 'setting-' + name }, h('strong', { text: label }), h('span', { class: 'hint', text: hint })));
  const list = (name, label, hint) => h('div', { class: 'field' },
    h('label', { for: 'setting-' + name, text: label }),
    h('textarea', { id: 'setting-' + name, name, spellcheck: 'false', value: (tenant[name] || []).join('\n') }),
    h('span', { class: 'hint', text: hint }));
  const number = (id, label, value, hint) => h('div', { class: 'field' },
    h('label', { for: id, text: label }),
    h('input', { type: 'number', id, min: String(limitsRange[0]), max: String(limitsRange[1]), step: '1', value: value === undefined ? '' : String(value) }),
    hint ? h('span', { class: 'hint', text: hint }) : null);

  const limits = tenant.attributeLimits || {};
  const result = h('div', { role: 'status', id: 'settings-result' });
  const save = h('button', { type: 'submit', id: 'settings-save', text: 'Save settings' });
  const form = h('form', { class: 'panel', novalidate: true, onsubmit: (event) => saveSettings(event, tenant, form, result, save) },
    checkbox('requireVerification', 'Require verification', ' App calls naming an external id need a valid proof (see Verification).'),
    checkbox('allowAnonymous', 'Allow anonymous subscribers', ' Off: a client call with a new anonymous id is refused.'),
    checkbox('emailProviderConnected', 'Email provider connected', ' On: an identify with an email also subscribes it on the email channel.'),
    list('protectedAttributes', 'Protected attributes', 'One key a line: keys only the backend may set or remove.'),
    list('blockedExternalIds', 'Blocked external ids', 'One id a line, on top of the built-in placeholders (null, guest, 0, …).'),
    h('fieldset', {}, h('legend', { text: 'Attribute limits' }),
      number('setting-maxKeys', 'Keys per subscriber', limits.maxKeys),
      number('setting-maxKeyLength', 'Key length (characters)', limits.maxKeyLength),
      number('setting-maxValueBytes', 'Value size (bytes of JSON)', limits.maxValueBytes)),
    'maxAliases' in tenant ? number('setting-maxAliases', 'Ids per person (maxAliases)', tenant.maxAliases, 'An identify that would give a person more ids does not merge.') : null,
    h('div', { class: 'row' }, save), result);
  add(body, form);
}

function utf8Length(text) { return new TextEncoder().encode(text).length; }

async function saveSettings(event, tenant, form, result, save) {
  event.preventDefault();
  clear(result);
  const value = (id) => form.querySelector('#' + id);
  const patch = {};
  for (const name of ['requireVerification', 'allowAnonymous', 'emailProviderConnected']) {
    const checked = value('setting-' + name).checked;
    if (checked !== tenant[name]) patch[name] = checked;
  }
  try {
    for (const name of ['protectedAttributes', 'blockedExternalIds']) {
      const items = value('setting-' + name).value.split('\n').map((line) => line.trim()).filter((line) => line.length > 0);
      if (items.length > 1000) throw new APIError(400, 'invalid_request', "'" + name + "' must be an array of at most 1000 strings.");
      if (items.some((item) => utf8Length(item) > 255)) throw new APIError(400, 'invalid_request', "'" + name + "' must be an array of non-empty strings.");
      if (JSON.stringify(items) !== JSON.stringify(tenant[name] || [])) patch[name] = items;
    }
    const integer = (id, path) => {
      const raw = value(id).value.trim();
      const n = Number(raw);
      if (raw === '' || !Number.isInteger(n) || n < limitsRange[0] || n > limitsRange[1]) {
        throw new APIError(400, 'invalid_request', "'" + path + "' must be an integer from 1 to 1000000.");
      }
      return n;
    };
    const limits = {};
    for (const name of ['maxKeys', 'maxKeyLength', 'maxValueBytes']) {
      const n = integer('setting-' + name, 'attributeLimits.' + name);
      if (n !== (tenant.attributeLimits || {})[name]) limits[name] = n;
    }
    if (Object.keys(limits).length) patch.attributeLimits = limits;
    if (value('setting-maxAliases')) {
      // The API owns this rule; send what was typed and show its answer.
      const raw = value('setting-maxAliases').value.trim();
      const n = Number(raw);
      if (raw === '' || !Number.isInteger(n)) throw new APIError(400, 'invalid_request', "'maxAliases' must be an integer.");
      if (n !== tenant.maxAliases) patch.maxAliases = n;
    }
  } catch (error) {
    add(result, errorBox(error));
    return;
  }
  if (Object.keys(patch).length === 0) { add(result, h('p', { class: 'muted', text: 'Nothing changed.' })); return; }
  save.disabled = true;
  add(result, loading('Saving…'));
  try {
    const next = (await api('PATCH', '/v1/tenant', patch)).data.tenant;
    Object.assign(tenant, next);
    clear(result);
    add(result, h('p', { class: 'notice', text: 'Saved: ' + Object.keys(patch).join(', ') + '.' }));
  } catch (error) {
    clear(result);
    add(result, errorBox(error));
  } finally {
    save.disabled = false;
  }
}

// MARK: - Identity secret

async function secretView(main) {
  add(main, h('h1', { text: 'Identity secret' }),
    h('p', { text: 'Your backend signs each user id with this secret (identityHash = hex HMAC-SHA256 of the external id, or an HS256 identityToken); the app sends the proof. Keep it on the server: never ship it in an app.' }));
  const shown = h('div', { id: 'secret-shown' });
  const reveal = h('button', {
    type: 'button', id: 'secret-reveal', text: 'Reveal the secret',
    onclick: async () => {
      clear(shown);
      add(shown, loading());
      try {
        const data = (await api('GET', '/v1/tenant/identity-secret')).data;
        clear(shown);
        add(shown, secretBox('Current identity secret', data.identitySecret, 'identity-secret'));
        if (data.previousExpiresAt) add(shown, h('p', { class: 'warn', id: 'previous-expires' }, 'The previous secret keeps verifying until ' + time(data.previousExpiresAt) + ' (' + data.previousExpiresAt + ').'));
        add(shown, h('button', { type: 'button', class: 'secondary', text: 'Hide', onclick: () => { clear(shown); reveal.focus(); } }));
      } catch (error) {
        clear(shown);
        add(shown, errorBox(error));
      }
    },
  });
  add(main, h('section', { class: 'panel' }, reveal, shown));

  const rotated = h('div', { id: 'secret-rotated', role: 'status' });
  const confirmRotate = h('button', { type: 'button', class: 'danger', id: 'secret-rotate-confirm', text: 'Rotate now' });
  const confirmBox = h('div', { class: 'confirm', hidden: true },
    h('p', { text: 'A new secret is made now. The current one keeps verifying for 24 hours, so deploy the new one to your backend within a day. Rotating again inside those 24 hours retires the oldest at once.' }),
    h('div', { class: 'row' }, confirmRotate, h('button', { type: 'button', class: 'secondary', text: 'Cancel', onclick: () => { confirmBox.hidden = true; start.hidden = false; start.focus(); } })));
  const start = h('button', { type: 'button', class: 'secondary', id: 'secret-rotate', text: 'Rotate the secret…', onclick: () => { start.hidden = true; confirmBox.hidden = false; confirmRotate.focus(); } });
  confirmRotate.addEventListener('click', async () => {
    confirmRotate.disabled = true;
    clear(rotated);
    add(rotated, loading('Rotating…'));
    try {
      const data = (await api('POST', '/v1/tenant/identity-secret/rotate')).data;
      clear(rotated);
      confirmBox.hidden = true;
      start.hidden = false;
      clear(shown);
      add(rotated, h('p', { class: 'notice', text: 'Rotated. This new secret is shown once here; copy it to your backend now.' }),
        secretBox('New identity secret', data.identitySecret, 'rotated-secret'),
        h('p', { class: 'warn', id: 'rotated-expires' }, 'The previous secret stops verifying at ' + time(data.previousExpiresAt) + ' (' + data.previousExpiresAt + ').'));
    } catch (error) {
      clear(rotated);
      add(rotated, errorBox(error));
    } finally {
      confirmRotate.disabled = false;
    }
  });
  add(main, h('h2', { text: 'Rotate' }), h('section', { class: 'panel' }, start, confirmBox, rotated));
}

// MARK: - Keys

async function keysView(main, _argument, alive) {
  add(main, h('h1', { text: 'Keys' }), h('p', { class: 'muted', text: 'Only the prefix of a key is stored in the clear; a new key is shown once.' }));
  const issued = h('div', { id: 'key-issued', role: 'status' });
  const kind = h('select', { id: 'key-kind' }, h('option', { value: 'secret', text: 'Secret key (backend)' }), h('option', { value: 'client', text: 'Client key (app)' }));
  const issue = h('button', { type: 'submit', id: 'key-issue', text: 'Issue key' });
  const listing = h('div', { id: 'key-list' }, loading('Loading keys…'));
  add(main, h('form', {
    class: 'panel row',
    onsubmit: async (event) => {
      event.preventDefault();
      issue.disabled = true;
      clear(issued);
      add(issued, loading('Issuing…'));
      try {
        const data = (await api('POST', '/v1/keys', { kind: kind.value })).data;
        clear(issued);
        add(issued, h('div', { class: 'panel' }, h('p', { class: 'notice', text: 'Issued ' + data.key.kind + ' key ' + data.key.id + '. It is shown this once.' }), secretBox('New key', data.apiKey, 'issued-key')));
        await listKeys(listing, alive);
      } catch (error) {
        clear(issued);
        add(issued, errorBox(error));
      } finally {
        issue.disabled = false;
      }
    },
  }, h('label', { for: 'key-kind', text: 'New' }), kind, issue), issued, listing);
  await listKeys(listing, alive);
}

async function listKeys(listing, alive) {
  const { keys } = (await api('GET', '/v1/keys')).data;
  if (!alive()) return;
  clear(listing);
  const mine = store.key;
  add(listing, table(['Prefix', 'Kind', 'Id', 'Created', 'State', ''], keys.map((key) => {
    const state = h('td', {}, key.revokedAt ? [badge('revoked', 'revoked'), h('div', { class: 'small muted', title: key.revokedAt, text: time(key.revokedAt) })] : badge('verified', 'active'));
    const action = h('td', {});
    if (!key.revokedAt) {
      const yours = mine.startsWith(key.prefix);
      const start = h('button', { type: 'button', class: 'secondary', 'data-revoke': key.id, text: 'Revoke…' });
      const confirm = h('span', { class: 'row', hidden: true },
        h('span', { class: 'small', text: 'Revoke ' + key.prefix + '…? It stops working at once.' + (yours ? ' This may be the key you are signed in with.' : '') }),
        h('button', {
          type: 'button', class: 'danger', 'data-revoke-confirm': key.id, text: 'Revoke',
          onclick: async (event) => {
            event.target.disabled = true;
            try {
              await api('DELETE', '/v1/keys/' + enc(key.id));
              clear(state);
              add(state, badge('revoked', 'revoked'));
              clear(action);
              add(action, h('p', { class: 'notice small', text: 'Revoked.' }));
              await listKeys(listing, alive);
            } catch (error) {
              // A 401 means this was the signed-in key: the banner says so.
              if (error.code !== 'unauthorized') add(action, errorBox(error));
            }
          },
        }),
        h('button', { type: 'button', class: 'secondary', text: 'Cancel', onclick: () => { confirm.hidden = true; start.hidden = false; start.focus(); } }));
      start.addEventListener('click', () => { start.hidden = true; confirm.hidden = false; confirm.querySelector('button').focus(); });
      add(action, start, confirm);
    }
    return h('tr', { 'data-key': key.id }, h('td', { class: 'mono', text: key.prefix + '…' }), h('td', { text: key.kind }), h('td', { class: 'mono small', text: key.id }), timeCell(key.createdAt), state, action);
  }), 'No keys.'));
}

// MARK: - Webhooks (API.md section 14)

async function webhooksView(main, _argument, alive) {
  add(main, h('h1', { text: 'Webhooks' }));
  const body = h('div', {}, loading('Loading webhooks…'));
  add(main, body);
  let envelope;
  try {
    envelope = await api('GET', '/v1/webhooks');
  } catch (error) {
    if (!alive()) return;
    clear(body);
    if (error.status === 404 && error.code === 'not_found') {
      add(body, h('p', { class: 'warn', id: 'webhooks-unavailable', text: 'Webhooks are not available on this server.' }));
      return;
    }
    throw error;
  }
  if (!alive()) return;
  clear(body);

  const created = h('div', { role: 'status' });
  const url = h('input', { type: 'url', id: 'webhook-url', class: 'grow', placeholder: 'https://example.com/buzzkit', required: true });
  const events = h('input', { type: 'text', id: 'webhook-events', class: 'grow', placeholder: 'every type (or: subscriber.created, subscriber.merged)' });
  const description = h('input', { type: 'text', id: 'webhook-description', class: 'grow' });
  const create = h('button', { type: 'submit', text: 'Add endpoint' });
  add(body, h('form', {
    class: 'panel', novalidate: true,
    onsubmit: async (event) => {
      event.preventDefault();
      clear(created);
      const request = { url: url.value.trim() };
      const types = events.value.split(',').map((t) => t.trim()).filter((t) => t);
      if (types.length) request.events = types;
      if (description.value.trim()) request.description = description.value.trim();
      create.disabled = true;
      try {
        const data = (await api('POST', '/v1/webhooks', request)).data;
        await listWebhooks(list, alive);
        url.value = '';
        events.value = '';
        description.value = '';
        add(created, h('p', { class: 'notice', text: 'Added ' + data.webhook.url + '. Its signing secret is shown this once.' }), secretBox('Signing secret', data.secret, 'webhook-secret'));
      } catch (error) {
        add(created, errorBox(error));
      } finally {
        create.disabled = false;
      }
    },
  },
  h('div', { class: 'field' }, h('label', { for: 'webhook-url', text: 'URL' }), url),
  h('div', { class: 'field' }, h('label', { for: 'webhook-events', text: 'Event types, comma-separated' }), events),
  h('div', { class: 'field' }, h('label', { for: 'webhook-description', text: 'Description' }), description),
  create), created);
  const list = h('div', { id: 'webhook-list' });
  add(body, list);
  renderWebhooks(list, envelope.data.webhooks, alive);
}

async function listWebhooks(list, alive) {
  const envelope = await api('GET', '/v1/webhooks');
  if (alive()) renderWebhooks(list, envelope.data.webhooks, alive);
}

function renderWebhooks(list, webhooks, alive) {
  clear(list);
  if (webhooks.length === 0) { add(list, h('p', { class: 'muted', text: 'No endpoints yet.' })); return; }
  for (const webhook of webhooks) {
    const out = h('div', { role: 'status' });
    const deliveries = h('div', {});
    add(list, h('section', { class: 'panel', 'data-webhook': webhook.id },
      h('h3', { class: 'mono', text: webhook.url }),
      h('dl', { class: 'facts' },
        h('dt', { text: 'Id' }), h('dd', { class: 'mono', text: webhook.id }),
        h('dt', { text: 'Events' }), h('dd', { text: (webhook.events || []).join(', ') }),
        h('dt', { text: 'State' }), h('dd', {}, webhook.enabled ? badge('verified', 'enabled') : badge('revoked', 'disabled')),
        h('dt', { text: 'Description' }), h('dd', { text: webhook.description || '—' }),
        h('dt', { text: 'Created' }), h('dd', { text: time(webhook.createdAt) })),
      h('div', { class: 'row' },
        h('button', {
          type: 'button', class: 'secondary', 'data-action': 'deliveries', text: 'Deliveries',
          onclick: () => showDeliveries(deliveries, webhook.id, '').catch((error) => { clear(deliveries); add(deliveries, errorBox(error)); }),
        }),
        h('button', {
          type: 'button', class: 'secondary', 'data-action': 'test', text: 'Send a test event',
          onclick: async () => {
            clear(out);
            try {
              const data = (await api('POST', '/v1/webhooks/' + enc(webhook.id) + '/test')).data;
              add(out, h('p', { class: 'notice', text: 'Test event ' + data.eventId + ' queued.' }));
            } catch (error) { add(out, errorBox(error)); }
          },
        }),
        h('button', {
          type: 'button', class: 'danger', text: 'Delete',
          onclick: async (event) => {
            if (event.target.dataset.armed !== 'yes') { event.target.dataset.armed = 'yes'; event.target.textContent = 'Click again to delete'; return; }
            try {
              await api('DELETE', '/v1/webhooks/' + enc(webhook.id));
              await listWebhooks(list, alive);
            } catch (error) { add(out, errorBox(error)); }
          },
        })),
      out, deliveries));
  }
}

async function showDeliveries(target, id, cursor) {
  clear(target);
  add(target, loading('Loading deliveries…'));
  const { deliveries, nextCursor } = (await api('GET', '/v1/webhooks/' + enc(id) + '/deliveries?limit=50' + (cursor ? '&cursor=' + enc(cursor) : ''))).data;
  clear(target);
  add(target, h('h3', { text: 'Deliveries, newest first' }), table(['Event', 'Type', 'Attempt', 'Status', 'HTTP', 'Error', 'At', 'Next attempt'], deliveries.map((d) => h('tr', {},
    h('td', { class: 'mono small', text: d.eventId }), h('td', { class: 'mono', text: d.type }), h('td', { text: String(d.attempt) }),
    h('td', {}, badge(d.status === 'succeeded' ? 'verified' : d.status === 'failed' ? 'revoked' : 'unverified', d.status)),
    h('td', { text: d.responseStatus === null || d.responseStatus === undefined ? '—' : String(d.responseStatus) }), h('td', { text: d.error || '' }),
    timeCell(d.createdAt), timeCell(d.nextAttemptAt))), 'No deliveries yet.'));
  if (nextCursor) add(target, h('button', { type: 'button', class: 'secondary', text: 'Older deliveries', onclick: () => showDeliveries(target, id, nextCursor) }));
}

// MARK: - Tenants (workspace key)

async function tenantsView(main) {
  add(main, h('h1', { text: 'Tenants' }));
  if (!isWorkspaceKey()) {
    add(main, h('p', { class: 'muted', text: 'A secret key belongs to one tenant. Sign in with a workspace key to switch between tenants or create one.' }));
    return;
  }
  add(main, h('p', { class: 'muted', text: 'The server has no listing of a workspace\'s tenants: the switcher holds the ones created or opened in this browser tab.' }));

  const known = h('div', {});
  const renderKnown = () => {
    clear(known);
    add(known, table(['Name', 'Id', ''], store.tenants.map((t) => h('tr', {},
      h('td', { text: t.name }), h('td', { class: 'mono', text: t.id }),
      h('td', {}, store.tenant === t.id ? badge('verified', 'current') : h('button', { type: 'button', class: 'secondary', text: 'Use', onclick: () => useTenant(t.id) })))), 'None yet in this session.'));
  };
  renderKnown();
  add(main, h('h2', { text: 'In this session' }), known);

  const openInput = h('input', { type: 'text', id: 'tenant-open-id', class: 'grow mono', placeholder: 'tn_…', spellcheck: 'false' });
  const openResult = h('div', { role: 'status' });
  add(main, h('h2', { text: 'Open a tenant by id' }), h('form', {
    class: 'panel row',
    onsubmit: async (event) => {
      event.preventDefault();
      clear(openResult);
      const id = openInput.value.trim();
      if (!id) return;
      try {
        const tenant = (await api('GET', '/v1/tenant', undefined, { tenant: id })).data.tenant;
        rememberTenant(tenant);
        useTenant(tenant.id);
      } catch (error) { add(openResult, errorBox(error)); }
    },
  }, h('label', { for: 'tenant-open-id', text: 'Tenant id' }), openInput, h('button', { type: 'submit', text: 'Open' })), openResult);

  const nameInput = h('input', { type: 'text', id: 'tenant-new-name', class: 'grow', maxlength: '100' });
  const createResult = h('div', { role: 'status', id: 'tenant-created' });
  add(main, h('h2', { text: 'Create a tenant' }), h('form', {
    class: 'panel row',
    onsubmit: async (event) => {
      event.preventDefault();
      clear(createResult);
      try {
        const data = (await api('POST', '/v1/tenants', { name: nameInput.value }, { tenant: '' })).data;
        rememberTenant(data.tenant);
        nameInput.value = '';
        store.tenant = data.tenant.id;
        renderTenantSwitcher();
        renderKnown();
        add(createResult, h('div', { class: 'panel' },
          h('p', { class: 'notice', text: 'Created ' + data.tenant.name + ' (' + data.tenant.id + ') and switched to it. Its keys and identity secret are shown this once.' }),
          secretBox('Secret key (backend)', data.secretKey, 'created-secret-key'),
          secretBox('Client key (app)', data.clientKey, 'created-client-key'),
          secretBox('Identity secret', data.identitySecret, 'created-identity-secret')));
      } catch (error) { add(createResult, errorBox(error)); }
    },
  }, h('label', { for: 'tenant-new-name', text: 'Name' }), nameInput, h('button', { type: 'submit', text: 'Create' })), createResult);
}

// MARK: - Start

document.addEventListener('DOMContentLoaded', () => {
  $('signin-form').addEventListener('submit', signIn);
  $('sign-out').addEventListener('click', signOut);
  // The skip link moves focus only: the hash is the router's.
  document.querySelector('.skip').addEventListener('click', (event) => { event.preventDefault(); $('view').focus(); });
  $('tenant-select').addEventListener('change', (event) => useTenant(event.target.value));
  window.addEventListener('hashchange', route);
  if (store.key) enterApp(); else showSignIn();
});
