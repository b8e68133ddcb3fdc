/**
 * Kubo RPC conventions shared by all handlers: the error shape, how query
 * options are typed (Go's strconv / time.ParseDuration rules), and how an
 * `ipfs-path` argument is parsed.
 */
import { CID } from 'multiformats/cid'

/**
 * An error that becomes Kubo's `{"Message","Code","Type":"error"}` body.
 * Code 0 (HTTP 500) is a command failure, Code 1 (HTTP 400) a client error.
 */
export class ApiError extends Error {
  name = 'ApiError'

  /**
   * @param {string} message
   * @param {{ code?: 0 | 1, status?: number }} [opts]
   */
  constructor (message, { code = 0, status } = {}) {
    super(message)
    this.code = code
    this.status = status ?? (code === 1 ? 400 : 500)
  }
}

/** @param {string} message */
export const clientError = (message) => new ApiError(message, { code: 1 })

/** @param {string} message */
export const serverError = (message) => new ApiError(message, { code: 0 })

/** @param {ApiError} err */
export function errorBody (err) {
  return JSON.stringify({ Message: err.message, Code: err.code, Type: 'error' }) + '\n'
}

/**
 * Typed access to the query string of one request, with Kubo's parsing
 * rules and error messages.
 */
export class Options {
  /** @param {URLSearchParams} params */
  constructor (params) {
    this.params = params
  }

  /** All positional `arg` values. */
  args () {
    return this.params.getAll('arg')
  }

  /**
   * The positional arguments, at least one being required.
   *
   * @param {string} name  Kubo's argument name used in the error
   */
  requiredArgs (name) {
    const args = this.args()
    if (args.length === 0) {
      throw clientError(`argument "${name}" is required`)
    }
    return args
  }

  /**
   * Exactly one positional argument.
   *
   * @param {string} name
   */
  requiredArg (name) {
    const args = this.requiredArgs(name)
    if (args.length > 1) {
      throw clientError(`expected 1 argument "${name}", got ${args.length}`)
    }
    return args[0]
  }

  /** @param {string} name */
  has (name) {
    return this.params.has(name)
  }

  /**
   * @param {string} name
   * @param {string | undefined} [fallback]
   */
  string (name, fallback) {
    return this.params.get(name) ?? fallback
  }

  /**
   * A boolean option; a bare `?flag` counts as true, as in Kubo.
   *
   * @param {string} name
   * @param {boolean} fallback
   */
  bool (name, fallback) {
    const raw = this.params.get(name)
    if (raw == null) return fallback
    if (raw === '') return true
    const value = parseGoBool(raw)
    if (value == null) {
      throw clientError(`Could not convert value "${raw}" to type bool (for option "-${name}")`)
    }
    return value
  }

  /**
   * An integer option.
   *
   * @param {string} name
   * @param {number | undefined} [fallback]
   */
  int (name, fallback) {
    const raw = this.params.get(name)
    if (raw == null) return fallback
    if (!/^[+-]?\d+$/.test(raw) || !Number.isSafeInteger(Number(raw))) {
      throw clientError(`Could not convert value "${raw}" to type int (for option "-${name}")`)
    }
    return Number(raw)
  }

  /**
   * A Go duration option (`timeout`), in milliseconds.
   *
   * @param {string} name
   * @returns {number | undefined}
   */
  duration (name) {
    const raw = this.params.get(name)
    if (raw == null || raw === '') return undefined
    const ms = parseGoDuration(raw)
    if (ms == null) {
      throw clientError(`time: invalid duration "${raw}"`)
    }
    return ms
  }
}

/**
 * Go's strconv.ParseBool.
 *
 * @param {string} text
 * @returns {boolean | undefined}
 */
export function parseGoBool (text) {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(text)) return true
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(text)) return false
  return undefined
}

const DURATION_UNITS = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, 'μs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 }

/**
 * Go's time.ParseDuration ("300ms", "1.5h", "2h45m", "10s"), in milliseconds.
 *
 * @param {string} text
 * @returns {number | undefined}
 */
export function parseGoDuration (text) {
  const match = /^([+-]?)((?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+|0)$/.exec(text)
  if (match == null) return undefined
  if (match[2] === '0') return 0
  let total = 0
  for (const [, num, unit] of match[2].matchAll(/(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g)) {
    total += Number(num) * DURATION_UNITS[unit]
  }
  return match[1] === '-' ? -total : total
}

/**
 * A parsed `ipfs-path` argument: `<cid>`, `/ipfs/<cid>` or
 * `/ipfs/<cid>/sub/path`.
 *
 * @typedef {object} IpfsPath
 * @property {string} raw     the argument as given
 * @property {CID} root       the root CID (version preserved)
 * @property {string} rest    path below the root, '' when none
 */

/**
 * Parse an ipfs-path argument the way Kubo's cmdutils.PathOrCidPath does.
 * Errors are command failures (HTTP 500), as in Kubo.
 *
 * @param {string} raw
 * @returns {IpfsPath}
 */
export function parseIpfsPath (raw) {
  let text = raw.trim()
  if (text.startsWith('/ipfs/')) {
    text = text.slice('/ipfs/'.length)
  } else if (text.startsWith('/')) {
    const ns = text.split('/')[1]
    throw serverError(`invalid path "${raw}": unsupported path namespace: ${ns}`)
  }
  const [first, ...restParts] = text.split('/')
  if (first === '') {
    throw serverError(`invalid path "${raw}": path does not have enough components`)
  }
  let root
  try {
    root = CID.parse(first)
  } catch (err) {
    throw serverError(`invalid path "${raw}": invalid cid: ${err.message}`)
  }
  return { raw, root, rest: restParts.filter(p => p !== '').join('/') }
}

/**
 * Parse a bare CID argument (block commands).
 *
 * @param {string} raw
 * @returns {CID}
 */
export function parseCidArg (raw) {
  const path = parseIpfsPath(raw)
  if (path.rest !== '') {
    throw serverError(`invalid path "${raw}": block commands take a CID, not a path below it`)
  }
  return path.root
}

/**
 * Kubo's default CID encoder: CIDv0 stays base58btc, CIDv1 becomes base32.
 *
 * @param {CID} cid
 */
export function formatCid (cid) {
  return cid.toString()
}
