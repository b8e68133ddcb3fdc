/**
 * The HTTP side of the Kubo RPC API: routing `/api/v0/<command>` to
 * handlers, per-request context (query options, the `timeout` and `offline`
 * global options, cancellation), Kubo's error shape and streamed responses.
 */
import { setMaxListeners } from 'node:events'
import http from 'node:http'
import { ApiError, Options, errorBody, serverError } from './kubo.mjs'

const API_PREFIX = '/api/v0/'

/**
 * The reason a request's work is aborted (client gone, daemon stopping).
 * Libraries may leave promises rejected with it unobserved once a request
 * is cancelled; the daemon's unhandled-rejection handler ignores these.
 */
export class RequestAbortedError extends Error {
  name = 'RequestAbortedError'
}

/**
 * True for errors that only say "this request was cancelled", including
 * Helia's aggregate errors whose every cause is such a cancellation.
 *
 * @param {unknown} err
 * @returns {boolean}
 */
export function isCancellation (err) {
  if (err == null || typeof err !== 'object') return false
  if (err instanceof RequestAbortedError || err.name === 'AbortError') return true
  if (Array.isArray(err.errors) && err.errors.length > 0) return err.errors.every(isCancellation)
  return isCancellation(err.cause)
}

/** Aborts a request when its `timeout` option elapses. */
export class DeadlineExceededError extends RequestAbortedError {
  name = 'DeadlineExceededError'
  message = 'context deadline exceeded'
}

/**
 * Everything a handler needs about one request.
 */
export class RequestContext {
  /**
   * @param {http.IncomingMessage} req
   * @param {http.ServerResponse} res
   * @param {URL} url
   * @param {AbortSignal} shutdownSignal
   */
  constructor (req, res, url, shutdownSignal) {
    this.req = req
    this.res = res
    this.url = url
    this.opts = new Options(url.searchParams)
    /** CID (string) the request is about, used in deadline/offline messages. */
    this.subject = undefined
    this.controller = new AbortController()
    this.signal = this.controller.signal
    // Helia adds a listener per block fetch; a big DAG means many at once
    setMaxListeners(Infinity, this.signal)
    this.timer = undefined
    this.cleanups = []

    const onShutdown = () => this.controller.abort(new RequestAbortedError('daemon is shutting down'))
    shutdownSignal.addEventListener('abort', onShutdown, { once: true })
    this.cleanups.push(() => shutdownSignal.removeEventListener('abort', onShutdown))
    // a client that goes away cancels the work done on its behalf
    res.on('close', () => {
      if (!res.writableFinished) this.controller.abort(new RequestAbortedError('client disconnected'))
    })
  }

  /** Apply the global options `timeout` and `offline` (throws ApiError). */
  applyGlobalOptions () {
    this.offline = this.opts.bool('offline', false)
    const ms = this.opts.duration('timeout')
    if (ms != null && ms > 0) {
      this.timer = setTimeout(() => this.controller.abort(new DeadlineExceededError()), ms)
    }
  }

  /** Options to pass to Helia / blockstore calls. */
  get fetchOptions () {
    return { signal: this.signal, offline: this.offline }
  }

  get deadlineExceeded () {
    return this.signal.aborted && this.signal.reason instanceof DeadlineExceededError
  }

  dispose () {
    clearTimeout(this.timer)
    for (const fn of this.cleanups) fn()
  }
}

/**
 * Translate anything thrown by a handler into Kubo's error.
 *
 * @param {unknown} err
 * @param {RequestContext} ctx
 * @returns {ApiError}
 */
export function toApiError (err, ctx) {
  if (err instanceof ApiError) return err
  const subject = err?.cid?.toString() ?? ctx.subject
  if (ctx.deadlineExceeded) {
    return serverError(subject == null
      ? 'context deadline exceeded'
      : `failed to get block for ${subject}: context deadline exceeded`)
  }
  if (isOfflineMiss(err)) {
    return serverError(`block was not found locally (offline): ${subject ?? ''}`.trimEnd())
  }
  if (ctx.signal.aborted) {
    return serverError(`context canceled: ${ctx.signal.reason?.message ?? 'aborted'}`)
  }
  return serverError(kuboMessage(err?.message ?? String(err)))
}

/**
 * Reword the few library messages whose Kubo counterpart clients may match.
 *
 * @param {string} message
 */
function kuboMessage (message) {
  const noLink = /^No link "(.*)" found under (\S+)$/.exec(message)
  if (noLink != null) return `no link named "${noLink[1]}" under ${noLink[2]}`
  return message
}

/** @param {any} err */
function isOfflineMiss (err) {
  if (err == null) return false
  if (err.name === 'BlockNotFoundWhileOfflineError') return true
  return Array.isArray(err.errors) && err.errors.some(isOfflineMiss)
}

/**
 * Send a JSON value (one line, as Kubo's encoder does).
 *
 * @param {RequestContext} ctx
 * @param {unknown} value
 */
export function sendJson (ctx, value) {
  const body = JSON.stringify(value) + '\n'
  ctx.res.writeHead(200, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(body)
  })
  ctx.res.end(body)
}

/**
 * Send an error in Kubo's shape, unless headers are already out.
 *
 * @param {http.ServerResponse} res
 * @param {ApiError} err
 */
function sendError (res, err) {
  if (res.headersSent) return
  const body = errorBody(err)
  res.writeHead(err.status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(body)
  })
  res.end(body)
}

/**
 * Stream an async iterable to the client. The first item is pulled before
 * any header is written, so a failure to start (missing block, timeout,
 * offline miss) is still a proper HTTP 500 JSON error. A failure later on
 * is reported in the `X-Stream-Error` trailer, as Kubo does.
 *
 * @param {RequestContext} ctx
 * @param {AsyncIterable<Uint8Array | string>} source
 * @param {Record<string, string>} headers
 */
export async function sendStream (ctx, source, headers) {
  const { res } = ctx
  const it = source[Symbol.asyncIterator]()
  const first = await it.next()
  res.writeHead(200, { ...headers, Trailer: 'X-Stream-Error' })
  try {
    if (!first.done) {
      await write(res, first.value, ctx.signal)
      for (let item = await it.next(); !item.done; item = await it.next()) {
        await write(res, item.value, ctx.signal)
      }
    }
  } catch (err) {
    try {
      await it.return?.()
    } catch {
      // the source failed while closing; the original error is reported
    }
    const apiErr = toApiError(err, ctx)
    ctx.log?.(`stream error: ${apiErr.message}`)
    if (!res.destroyed) res.addTrailers({ 'X-Stream-Error': apiErr.message.replace(/[\r\n]+/g, ' ') })
  }
  res.end()
}

/**
 * Newline-delimited JSON, streamed (add, pin/ls?stream=true).
 *
 * @param {RequestContext} ctx
 * @param {AsyncIterable<unknown>} values
 */
export function sendNdjson (ctx, values) {
  return sendStream(ctx, mapToLines(values), {
    'Content-Type': 'application/json',
    'X-Chunked-Output': '1'
  })
}

/** @param {AsyncIterable<unknown>} values */
async function * mapToLines (values) {
  for await (const value of values) yield JSON.stringify(value) + '\n'
}

/**
 * Write with back-pressure; rejects if the request is aborted meanwhile.
 *
 * @param {http.ServerResponse} res
 * @param {Uint8Array | string} chunk
 * @param {AbortSignal} signal
 */
function write (res, chunk, signal) {
  signal.throwIfAborted()
  if (res.write(chunk)) return Promise.resolve()
  return new Promise((resolve, reject) => {
    const done = (err) => {
      res.off('drain', onDrain)
      res.off('close', onClose)
      signal.removeEventListener('abort', onAbort)
      if (err == null) resolve()
      else reject(err)
    }
    const onDrain = () => done()
    const onClose = () => done(new RequestAbortedError('client disconnected'))
    const onAbort = () => done(signal.reason)
    res.on('drain', onDrain)
    res.on('close', onClose)
    signal.addEventListener('abort', onAbort, { once: true })
  })
}

/**
 * A plain-text answer (404 and 405, as Go's net/http writes them).
 *
 * @param {http.IncomingMessage} req
 * @param {http.ServerResponse} res
 * @param {number} status
 * @param {string} body
 * @param {Record<string, string>} headers
 */
function sendText (req, res, status, body, headers) {
  req.resume()
  res.writeHead(status, {
    'Content-Type': 'text/plain; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    ...headers
  })
  res.end(body)
}

/**
 * Create (but do not start) the API server.
 *
 * @param {object} opts
 * @param {Record<string, (ctx: RequestContext) => Promise<void>>} opts.commands  keyed by 'add', 'pin/ls', ...
 * @param {Promise<void>} opts.ready      requests wait for this before running
 * @param {AbortSignal} opts.shutdownSignal
 * @param {(msg: string) => void} opts.log
 */
export function createApiServer ({ commands, ready, shutdownSignal, log }) {
  const server = http.createServer((req, res) => {
    handle(req, res).catch(err => {
      log(`internal error: ${err?.stack ?? err}`)
      if (!res.headersSent) sendError(res, serverError(String(err?.message ?? err)))
      else res.destroy()
    })
  })
  server.keepAliveTimeout = 5000
  // long fetches (pin/add of big DAGs) must not be cut by Node's defaults
  server.requestTimeout = 0
  server.headersTimeout = 60_000

  async function handle (req, res) {
    const started = process.hrtime.bigint()
    const url = new URL(req.url ?? '/', 'http://ipfsd.invalid')
    res.on('close', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6
      const status = !res.headersSent ? 'aborted' : res.writableFinished ? res.statusCode : `${res.statusCode} (cut off)`
      log(`${req.method} ${url.pathname}${url.search} ${status} ${ms.toFixed(0)}ms`)
    })

    const name = url.pathname.startsWith(API_PREFIX) ? url.pathname.slice(API_PREFIX.length) : undefined
    const handler = name != null && Object.hasOwn(commands, name) ? commands[name] : undefined
    if (handler == null) {
      sendText(req, res, 404, '404 page not found\n', { 'X-Content-Type-Options': 'nosniff' })
      return
    }
    if (req.method !== 'POST') {
      sendText(req, res, 405, '405 - Method Not Allowed\n', { Allow: 'POST' })
      return
    }

    await ready
    const ctx = new RequestContext(req, res, url, shutdownSignal)
    ctx.log = log
    try {
      ctx.applyGlobalOptions()
      await handler(ctx)
    } catch (err) {
      const apiErr = toApiError(err, ctx)
      if (apiErr.status === 500) log(`${name}: ${apiErr.message}`)
      if (!req.complete) req.resume()
      if (res.headersSent) res.end()
      else sendError(res, apiErr)
    } finally {
      ctx.dispose()
    }
  }

  return server
}
