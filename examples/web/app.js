// examples/web/app.js — the web example's calls to TransferGateway, in plain browser JavaScript.
//
// Two ways to send a file:
//   - an upload job: POST /v1/jobs {type: 'upload'}, then the bytes to PATCH /v1/jobs/{id}/data
//     with XMLHttpRequest (its upload progress event is the "sent" figure); the gateway stores
//     them in S3 part by part and the progress bar follows the job's event stream (an
//     EventSource on its eventsUrl);
//   - a client-driven multipart upload: POST /v1/uploads, then each part PUT straight to S3 on a
//     presigned URL, a few at once; the bar follows GET /v1/uploads/{id} (the parts S3 holds).
// Every open transfer is remembered in localStorage, so after a reload choosing the same file
// again resumes it from what the gateway (or S3) already holds.
'use strict';

const JOB_LIMIT = 16 * 1024 * 1024;  // 'automatic': an upload job below this, multipart above
const PARTS_IN_FLIGHT = 3;
const MAX_ATTEMPTS = 8;
const CONFIG_KEY = 'transferGateway.config';
const TRANSFERS_KEY = 'transferGateway.transfers';
const LEVEL = 'private';
const PREFIX = 'example/';

const $ = (id) => document.getElementById(id);
const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const backoff = (attempt) => Math.min(15000, 500 * 2 ** attempt) * (0.5 + Math.random() / 2);
const isFinal = (state) => state === 'completed' || state === 'failed' || state === 'canceled';

// ---- settings: gateway URL and token (from the link scripts/run.sh prints, or typed in) ----

const config = (() => {
  const saved = JSON.parse(localStorage.getItem(CONFIG_KEY) || '{}');
  const hash = new URLSearchParams(location.hash.slice(1));
  for (const name of ['gateway', 'token']) if (hash.get(name)) saved[name] = hash.get(name);
  if (hash.has('token') || hash.has('gateway')) {
    localStorage.setItem(CONFIG_KEY, JSON.stringify(saved));
    history.replaceState(null, '', location.pathname);  // the token leaves the address bar
  }
  saved.gateway = (saved.gateway || 'http://127.0.0.1:8080').replace(/\/+$/, '');
  return saved;
})();

function status(text, isError) {
  $('status').textContent = text;
  $('status').className = isError ? 'error' : '';
}

function formatBytes(n) {
  if (n == null) return '?';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n : n.toFixed(1)) + ' ' + units[i];
}

// ---- the gateway's JSON API ----

class APIError extends Error {
  constructor(status, problem) {
    super((problem && (problem.detail || problem.title)) || 'HTTP ' + status);
    this.status = status;
    this.code = problem && problem.code;
  }
}

async function api(method, path, body, headers = {}) {
  const init = { method, headers: { Authorization: 'Bearer ' + config.token, ...headers } };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const response = await fetch(config.gateway + path, init);
  const text = response.status === 204 ? '' : await response.text();
  const data = text ? JSON.parse(text) : null;
  if (!response.ok) throw new APIError(response.status, data);
  return data;
}

/// PUTs or PATCHes a Blob with XMLHttpRequest (fetch reports no upload progress).
/// Resolves {status, code, offset} — status 0 for a network error, -1 when aborted.
function send(method, url, blob, headers, onProgress, track) {
  return new Promise((resolve) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, url);
    for (const [name, value] of Object.entries(headers)) xhr.setRequestHeader(name, value);
    xhr.upload.onprogress = (event) => onProgress(event.loaded);
    const done = (status) => {
      track.delete(xhr);
      let code = null;
      try { code = JSON.parse(xhr.responseText).code; } catch (_) { /* not JSON */ }
      resolve({ status, code });
    };
    xhr.onload = () => done(xhr.status);
    xhr.onerror = () => done(0);
    xhr.ontimeout = () => done(0);
    xhr.onabort = () => done(-1);
    track.add(xhr);
    xhr.send(blob);
  });
}

// ---- open transfers, remembered across reloads ----

const remembered = JSON.parse(localStorage.getItem(TRANSFERS_KEY) || '{}');
const transfers = new Map();  // object key → Transfer

function remember(record) {
  remembered[record.key] = record;
  localStorage.setItem(TRANSFERS_KEY, JSON.stringify(remembered));
}

function forget(record) {
  delete remembered[record.key];
  localStorage.setItem(TRANSFERS_KEY, JSON.stringify(remembered));
}

/// One file on its way: the row on the page, the record kept in localStorage, and the requests
/// in flight. Subclasses say how the bytes travel.
class Transfer {
  constructor(record, file) {
    this.record = record;
    this.file = file;
    this.running = false;
    this.requests = new Set();
    this.row = document.createElement('li');
    this.row.className = 'transfer';
    this.row.dataset.key = record.key;
    this.row.innerHTML = '<div><span class="name"></span> <span class="meta method"></span></div>' +
      '<progress max="1" value="0"></progress>' +
      '<div class="meta"><span class="state"></span> · <span class="stored"></span> · <span class="sent"></span>' +
      ' <button class="pause">Pause</button><button class="resume">Resume</button><button class="cancel">Cancel</button></div>';
    this.row.querySelector('.name').textContent = record.name;
    this.row.querySelector('.method').textContent = record.method === 'job' ? 'upload job' : 'multipart to S3';
    this.row.querySelector('.pause').onclick = () => this.act(() => this.pause());
    this.row.querySelector('.resume').onclick = () => this.act(() => this.resume());
    this.row.querySelector('.cancel').onclick = () => this.act(() => this.cancel());
    $('transfers').prepend(this.row);
    transfers.set(record.key, this);
  }

  act(action) {
    action().catch((error) => this.setState('failed', error.message));
  }

  setState(state, detail) {
    this.state = state;
    this.row.dataset.state = state;
    this.row.className = 'transfer state-' + state;
    this.row.querySelector('.state').textContent = detail ? state + ': ' + detail : state;
    const open = !isFinal(state) && state !== 'waiting for file';
    this.row.querySelector('.pause').disabled = !open || state === 'paused';
    this.row.querySelector('.resume').disabled = !open || state !== 'paused';
    this.row.querySelector('.cancel').disabled = isFinal(state);
  }

  /// The bar shows what the gateway reports as stored, not what the browser has sent.
  setStored(fraction, bytes) {
    this.row.querySelector('progress').value = fraction;
    this.row.dataset.fraction = String(fraction);
    this.row.querySelector('.stored').textContent = formatBytes(bytes) + ' of ' + formatBytes(this.record.size) + ' stored';
  }

  setSent(bytes) {
    this.row.querySelector('.sent').textContent = formatBytes(bytes) + ' sent';
  }

  /// An open transfer found after a reload waits for its file to be chosen again.
  waitForFile() {
    this.setState('waiting for file', 'choose ' + this.record.name + ' again to resume');
  }

  attach(file) {
    this.file = file;
    return this.resume();
  }

  /// Stops following the transfer's progress (a job's event stream).
  unwatch() {}

  finished(state, detail) {
    this.running = false;
    this.unwatch();
    for (const request of this.requests) request.abort();
    forget(this.record);
    this.setState(state, detail);
    if (state === 'completed') {
      this.setStored(1, this.record.size);
      this.setSent(this.record.size);
      listObjects();
    }
  }
}

/// An upload job: the gateway receives the bytes and stores them in S3 part by part.
class JobTransfer extends Transfer {
  async resume() {
    if (!this.record.jobId) {
      const job = await api('POST', '/v1/jobs', {
        type: 'upload', accessLevel: LEVEL, key: this.record.key, size: this.record.size,
        ...(this.record.type ? { contentType: this.record.type } : {}),
      }, { 'Idempotency-Key': this.record.idempotencyKey });
      this.record.jobId = job.id;
      remember(this.record);
    } else if (this.state === 'paused') {
      await api('POST', `/v1/jobs/${this.record.jobId}/resume`);
    }
    this.running = true;
    this.setState('running');
    this.watch();
    await this.sendBytes();
  }

  /// Sends the file from the gateway's committed offset; after a broken connection, again from
  /// the offset the gateway reports, with backoff.
  async sendBytes() {
    for (let attempt = 0; this.running; attempt++) {
      const job = await api('GET', `/v1/jobs/${this.record.jobId}`);
      this.show(job);
      if (isFinal(job.state) || job.state === 'paused') return;
      const offset = job.bytesCommitted;
      const outcome = await send('PATCH', `${config.gateway}/v1/jobs/${this.record.jobId}/data`,
        this.file.slice(offset), {
          Authorization: 'Bearer ' + config.token,
          'Content-Type': 'application/offset+octet-stream',
          'Upload-Offset': String(offset),
        }, (loaded) => this.setSent(offset + loaded), this.requests);
      if (outcome.status >= 200 && outcome.status < 300) return;
      if (outcome.status === -1 || outcome.code === 'job_paused') return;
      const retryable = outcome.status === 0 || outcome.status >= 500 || outcome.status === 429 ||
        outcome.code === 'offset_mismatch' || outcome.code === 'upload_in_progress';
      if (!retryable || attempt + 1 >= MAX_ATTEMPTS) {
        this.finished('failed', outcome.code || 'HTTP ' + outcome.status);
        return;
      }
      this.setState('running', 'connection lost, trying again');
      await delay(backoff(attempt));
    }
  }

  /// Follows the job with an EventSource on its eventsUrl (a signed link: EventSource cannot
  /// send an Authorization header): an event comes as soon as the job changes. A link that
  /// expired, or a stream that failed for good, is opened again from a fresh job.
  watch() {
    if (this.events || this.watching) return;
    this.watching = true;
    const open = async () => {
      let job;
      try {
        job = await api('GET', `/v1/jobs/${this.record.jobId}`);
      } catch (error) {
        if (error.status === 404) { this.watching = false; this.finished('failed', 'the job is gone'); return; }
        setTimeout(open, 2000);
        return;
      }
      this.show(job);
      if (!this.watching || isFinal(job.state) || !job.eventsUrl) return;
      const source = new EventSource(job.eventsUrl);
      this.events = source;
      source.addEventListener('job', (event) => this.show(JSON.parse(event.data)));
      source.onerror = () => {
        if (source.readyState !== EventSource.CLOSED) return;  // it reconnects by itself
        this.events = null;
        if (this.watching) setTimeout(open, 2000);
      };
    };
    open();
  }

  unwatch() {
    this.watching = false;
    if (this.events) { this.events.close(); this.events = null; }
  }

  show(job) {
    this.setStored(job.fractionCompleted, job.bytesTransferred);
    if (isFinal(job.state)) {
      this.unwatch();
      if (this.state !== job.state) this.finished(job.state, job.error && job.error.code);
    } else if (job.state === 'paused' && this.state !== 'paused') {
      this.setState('paused');
    }
  }

  async pause() {
    this.running = false;
    await api('POST', `/v1/jobs/${this.record.jobId}/pause`);
    for (const request of this.requests) request.abort();
    this.setState('paused');
  }

  async cancel() {
    this.running = false;
    this.unwatch();
    for (const request of this.requests) request.abort();
    if (this.record.jobId) await api('POST', `/v1/jobs/${this.record.jobId}/cancel`);
    this.finished('canceled');
  }
}

/// A client-driven multipart upload: the page sends each part straight to S3 on a presigned URL.
class MultipartTransfer extends Transfer {
  constructor(record, file) {
    super(record, file);
    this.urls = new Map();  // part number → presigned URL
    this.inFlight = new Map();  // part number → bytes sent of it
    this.held = 0;  // bytes in the parts S3 holds
  }

  async resume() {
    if (!this.record.uploadId) {
      const upload = await api('POST', '/v1/uploads', {
        accessLevel: LEVEL, key: this.record.key, size: this.record.size,
        ...(this.record.type ? { contentType: this.record.type } : {}),
      }, { 'Idempotency-Key': this.record.idempotencyKey });
      Object.assign(this.record, { uploadId: upload.uploadId, partSize: upload.partSize, partCount: upload.partCount });
      remember(this.record);
      for (const part of upload.parts) this.urls.set(part.partNumber, part.url);
    }
    const state = await this.refresh();
    const held = new Set(state.parts.map((part) => part.partNumber));
    this.queue = [];
    for (let n = 1; n <= this.record.partCount; n++) if (!held.has(n)) this.queue.push(n);
    this.running = true;
    this.setState('running');
    this.poll();
    const workers = [];
    for (let i = 0; i < PARTS_IN_FLIGHT; i++) workers.push(this.work());
    await Promise.all(workers);
    if (!this.running || this.queue.length > 0) return;
    const done = await api('POST', `/v1/uploads/${this.record.uploadId}/complete`, {});
    if (done.size !== this.record.size) throw new Error('S3 holds ' + done.size + ' bytes');
    this.finished('completed');
  }

  /// What the gateway says S3 holds: the progress bar.
  async refresh() {
    const state = await api('GET', `/v1/uploads/${this.record.uploadId}`);
    this.held = state.bytesUploaded;
    this.setStored(state.fractionCompleted, state.bytesUploaded);
    return state;
  }

  async poll() {
    if (this.polling) return;
    this.polling = true;
    while (this.running) {
      await delay(1000);
      if (this.running) await this.refresh().catch(() => {});
    }
    this.polling = false;
  }

  async work() {
    while (this.running && this.queue.length > 0) {
      const number = this.queue.shift();
      if (!(await this.sendPart(number))) {
        this.queue.unshift(number);
        return;
      }
    }
  }

  async sendPart(number) {
    const start = (number - 1) * this.record.partSize;
    const blob = this.file.slice(start, Math.min(this.record.size, start + this.record.partSize));
    for (let attempt = 0; this.running; attempt++) {
      const url = await this.url(number);
      const outcome = await send('PUT', url, blob, {}, (loaded) => {
        this.inFlight.set(number, loaded);
        this.showSent();
      }, this.requests);
      this.inFlight.delete(number);
      if (outcome.status >= 200 && outcome.status < 300) return true;
      if (outcome.status === -1) return false;
      if (outcome.status === 403) this.urls.delete(number);  // expired: ask for a fresh URL
      if (attempt + 1 >= MAX_ATTEMPTS) {
        this.finished('failed', 'part ' + number + ': HTTP ' + outcome.status);
        return false;
      }
      await delay(backoff(attempt));
    }
    return false;
  }

  /// A presigned URL for a part, asked for with the next few parts' so a long upload never
  /// holds an expired one for long.
  async url(number) {
    if (!this.urls.has(number)) {
      const partNumbers = [number, ...this.queue.slice(0, 9)];
      const answer = await api('POST', `/v1/uploads/${this.record.uploadId}/parts`, { partNumbers });
      for (const part of answer.parts) this.urls.set(part.partNumber, part.url);
    }
    return this.urls.get(number);
  }

  showSent() {
    let bytes = this.held;
    for (const loaded of this.inFlight.values()) bytes += loaded;
    this.setSent(bytes);
  }

  async pause() {
    this.running = false;
    for (const request of this.requests) request.abort();
    this.setState('paused');
    await this.refresh();
  }

  async cancel() {
    this.running = false;
    for (const request of this.requests) request.abort();
    if (this.record.uploadId) await api('DELETE', `/v1/uploads/${this.record.uploadId}`);
    this.finished('canceled');
  }
}

function transferFor(record, file) {
  return record.method === 'job' ? new JobTransfer(record, file) : new MultipartTransfer(record, file);
}

/// Chosen files: one the page remembers (same name, size and modification time) resumes; any
/// other starts a new transfer.
function choose(files) {
  for (const file of files) {
    const key = PREFIX + file.name;
    const known = transfers.get(key);
    if (known && known.state === 'waiting for file' && known.record.size === file.size &&
        known.record.lastModified === file.lastModified) {
      known.attach(file).catch((error) => known.finished('failed', error.message));
      continue;
    }
    if (known && !isFinal(known.state)) {
      status(file.name + ' is already on its way; cancel it first to send it again.', true);
      continue;
    }
    if (known) { known.row.remove(); transfers.delete(key); }
    const wanted = $('method').value;
    const record = {
      key, name: file.name, size: file.size, type: file.type, lastModified: file.lastModified,
      method: wanted === 'auto' ? (file.size < JOB_LIMIT ? 'job' : 'multipart') : wanted,
      idempotencyKey: crypto.randomUUID(),
    };
    remember(record);
    const transfer = transferFor(record, file);
    transfer.setState('starting');
    transfer.resume().catch((error) => transfer.finished('failed', error.message));
  }
}

// ---- your files, with download links ----

let listings = 0;

async function listObjects() {
  const listing = ++listings;
  let answer;
  try {
    answer = await api('GET', `/v1/objects?accessLevel=${LEVEL}&prefix=${encodeURIComponent(PREFIX)}&limit=100`);
  } catch (error) {
    status('Listing failed: ' + error.message, true);
    return;
  }
  if (listing !== listings) return;  // a later listing draws the table
  const rows = $('object-rows');
  rows.replaceChildren();
  for (const object of answer.objects) {
    const row = rows.insertRow();
    row.dataset.key = object.key;
    row.insertCell().textContent = object.key;
    const size = row.insertCell();
    size.className = 'size';
    size.textContent = formatBytes(object.size);
    row.insertCell().textContent = new Date(object.lastModified).toLocaleString();
    const cell = row.insertCell();
    const button = document.createElement('button');
    button.textContent = 'Get link';
    button.className = 'link';
    button.onclick = () => {
      button.disabled = true;
      link(object.key, cell).catch((error) => { cell.textContent = error.message; });
    };
    cell.append(button);
  }
}

/// A download job pins the object and answers a dataUrl: a signed link that needs no
/// Authorization header, so a plain <a download> works.
async function link(key, cell) {
  const filename = key.slice(key.lastIndexOf('/') + 1);
  const job = await api('POST', '/v1/jobs', { type: 'download', source: { accessLevel: LEVEL, key }, filename });
  const anchor = document.createElement('a');
  anchor.href = job.dataUrl;
  anchor.download = filename;
  anchor.className = 'download';
  anchor.textContent = 'Download';
  cell.replaceChildren(anchor);
}

// ---- start ----

$('gateway').value = config.gateway;
$('token').value = config.token || '';
$('save').onclick = () => {
  config.gateway = $('gateway').value.trim().replace(/\/+$/, '');
  config.token = $('token').value.trim();
  localStorage.setItem(CONFIG_KEY, JSON.stringify(config));
  connect();
};
$('files').onchange = (event) => {
  choose(Array.from(event.target.files));
  event.target.value = '';
};
$('refresh').onclick = listObjects;

async function connect() {
  if (!config.token) {
    status('Paste a token (scripts/run.sh prints a link with one), then Connect.', true);
    return;
  }
  try {
    const health = await fetch(config.gateway + '/healthz');
    if (!health.ok) throw new Error('HTTP ' + health.status);
  } catch (error) {
    status('The gateway at ' + config.gateway + ' does not answer (' + error.message + ').', true);
    return;
  }
  status('Connected to ' + config.gateway + '.');
  listObjects();
}

for (const record of Object.values(remembered)) transferFor(record, null).waitForFile();
connect();
