/**
 * Command line parsing for ipfsd.
 *
 * Every problem is reported as a `UsageError` carrying one human-readable
 * line; the entry point prints it and exits with code 2.
 */
import { parseArgs } from 'node:util'
import { multiaddr } from '@multiformats/multiaddr'
import { isLoopbackAddr } from './node.mjs'

export const USAGE = 'usage: node tools/ipfsd/ipfsd.mjs --repo DIR [--api-host 127.0.0.1] [--api-port 5001] [--swarm-port 0] [--peer MULTIADDR ...]'

/** A bad command line: the message is a single line meant for stderr. */
export class UsageError extends Error {
  name = 'UsageError'
}

/**
 * @typedef {object} Config
 * @property {string} repo       repository directory
 * @property {string} apiHost    address the HTTP API binds to
 * @property {number} apiPort    TCP port of the HTTP API (0 = random)
 * @property {number} swarmPort  TCP port of the libp2p listener (0 = random)
 * @property {string[]} peers    multiaddrs (with /p2p/) to keep connected to
 */

/**
 * Parse `argv` (without node and the script path) into a Config.
 *
 * @param {string[]} argv
 * @returns {Config}
 */
export function parseCommandLine (argv) {
  let values
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        repo: { type: 'string' },
        'api-host': { type: 'string', default: '127.0.0.1' },
        'api-port': { type: 'string', default: '5001' },
        'swarm-port': { type: 'string', default: '0' },
        peer: { type: 'string', multiple: true, default: [] },
        help: { type: 'boolean', short: 'h', default: false }
      }
    }))
  } catch (err) {
    throw new UsageError(`${firstLine(err.message)}; ${USAGE}`)
  }
  if (values.help) {
    throw new UsageError(USAGE)
  }
  if (values.repo == null || values.repo === '') {
    throw new UsageError(`--repo is required; ${USAGE}`)
  }
  return {
    repo: values.repo,
    apiHost: values['api-host'],
    apiPort: parsePort(values['api-port'], '--api-port'),
    swarmPort: parsePort(values['swarm-port'], '--swarm-port'),
    peers: values.peer.map(checkPeerAddress)
  }
}

/**
 * @param {string} text
 * @param {string} flag
 * @returns {number}
 */
function parsePort (text, flag) {
  if (!/^\d{1,5}$/.test(text) || Number(text) > 65535) {
    throw new UsageError(`${flag} must be a TCP port number (0-65535), got "${text}"; ${USAGE}`)
  }
  return Number(text)
}

/**
 * A --peer value must be a parseable multiaddr that names the peer.
 *
 * @param {string} text
 * @returns {string}
 */
function checkPeerAddress (text) {
  let ma
  try {
    ma = multiaddr(text)
  } catch (err) {
    throw new UsageError(`--peer "${text}" is not a valid multiaddr (${firstLine(err.message)}); ${USAGE}`)
  }
  if (!ma.getComponents().some(c => c.name === 'p2p')) {
    throw new UsageError(`--peer "${text}" must end with /p2p/<peer id>; ${USAGE}`)
  }
  if (!isLoopbackAddr(ma)) {
    throw new UsageError(`--peer "${text}" must be a loopback address (/ip4/127.x.x.x or /ip6/::1); ${USAGE}`)
  }
  return text
}

/** @param {string} text */
function firstLine (text) {
  return String(text).split('\n')[0]
}
