/**
 * Handlers of the Kubo RPC commands this daemon serves. Each takes a
 * RequestContext (see http.mjs) and writes Kubo's response shape.
 */
import { publicKeyToProtobuf } from '@libp2p/crypto/keys'
import { peerIdFromString } from '@libp2p/peer-id'
import { multiaddr } from '@multiformats/multiaddr'
import { exporter } from 'ipfs-unixfs-exporter'
import toBuffer from 'it-to-buffer'
import { addFromMultipart, parseAddOptions } from './add.mjs'
import { errorTaggingBlockstore } from './dag.mjs'
import { clientError, formatCid, parseCidArg, parseIpfsPath, serverError } from './kubo.mjs'
import { sendJson, sendNdjson, sendStream } from './http.mjs'
import { AGENT_VERSION, isLoopbackAddr } from './node.mjs'
import { KuboPins } from './pins.mjs'

const HELIA_VERSION = '7.1.15'
const PIN_TYPES = ['all', 'recursive', 'direct', 'indirect']
// blocks `cat` loads ahead of the one it is sending: enough to keep bitswap
// busy, without buffering a whole 174-link layer (45 MiB) before the first byte
const CAT_READ_AHEAD = 16

/**
 * @param {object} deps
 * @param {import('helia').Helia & { libp2p: import('@libp2p/interface').Libp2p }} deps.helia
 * @param {() => void} deps.requestShutdown
 * @param {(msg: string) => void} deps.log
 * @returns {Record<string, (ctx: import('./http.mjs').RequestContext) => Promise<void>>}
 */
export function createCommands ({ helia, requestShutdown, log }) {
  const pins = new KuboPins(helia)
  const blockstore = errorTaggingBlockstore(helia.blockstore)

  /**
   * Resolve an ipfs-path argument to the CID it names (walking a sub-path
   * through UnixFS directories when there is one).
   *
   * @param {import('./http.mjs').RequestContext} ctx
   * @param {string} raw
   */
  async function resolveToCid (ctx, raw) {
    const path = parseIpfsPath(raw)
    ctx.subject = path.root.toString()
    if (path.rest === '') return path.root
    const entry = await exporter(`${path.root}/${path.rest}`, blockstore, ctx.fetchOptions)
    return entry.cid
  }

  return {
    /**
     * `add`: import multipart file parts as UnixFS files, Kubo-compatible
     * CIDs; one `{"Name","Hash","Size"}` line per file.
     */
    async add (ctx) {
      const options = parseAddOptions(ctx.opts)
      const results = addFromMultipart(ctx, options, {
        blockstore: helia.blockstore,
        pin: async (cid) => { await pins.add(cid, true, { signal: ctx.signal, offline: true }) }
      })
      await sendNdjson(ctx, results)
    },

    /**
     * `cat`: stream file bytes, fetching missing blocks over bitswap.
     * Options `offset` and `length` select a byte range.
     */
    async cat (ctx) {
      const args = ctx.opts.requiredArgs('ipfs-path')
      const offset = ctx.opts.int('offset', 0)
      const length = ctx.opts.int('length', undefined)
      if (offset < 0) throw serverError('cannot specify negative offset')
      if (length != null && length < 0) throw serverError(`cannot specify negative length (${length})`)

      const files = []
      let total = 0n
      for (const raw of args) {
        const path = parseIpfsPath(raw)
        ctx.subject = path.root.toString()
        const entry = await exporter(path.rest === '' ? path.root : `${path.root}/${path.rest}`, blockstore, ctx.fetchOptions)
        if (entry.type === 'directory') throw serverError('this dag node is a directory')
        if (entry.type === 'object') throw serverError(`cannot cat ${raw}: not a unixfs file`)
        files.push(entry)
        total += entry.size
      }
      if (BigInt(offset) > total) {
        throw serverError(`offset was past the end of file (${offset} > ${total})`)
      }
      const wanted = length == null ? total - BigInt(offset) : minBig(BigInt(length), total - BigInt(offset))
      await sendStream(ctx, catRange(files, offset, wanted, ctx), {
        'Content-Type': 'text/plain',
        'X-Stream-Output': '1',
        'X-Content-Length': wanted.toString()
      })
    },

    /**
     * `block/get`: the raw block bytes exactly as stored (no re-hashing).
     */
    async 'block/get' (ctx) {
      const cid = parseCidArg(ctx.opts.requiredArg('cid'))
      ctx.subject = cid.toString()
      await sendStream(ctx, blockstore.get(cid, ctx.fetchOptions), {
        'Content-Type': 'application/octet-stream',
        'X-Stream-Output': '1'
      })
    },

    /** `block/stat`: `{"Key","Size"}` with the CID as given. */
    async 'block/stat' (ctx) {
      const cid = parseCidArg(ctx.opts.requiredArg('cid'))
      ctx.subject = cid.toString()
      const bytes = await toBuffer(blockstore.get(cid, ctx.fetchOptions))
      sendJson(ctx, { Key: formatCid(cid), Size: bytes.byteLength })
    },

    /**
     * `pin/add`: recursive (default) or direct pin, fetching the DAG first.
     */
    async 'pin/add' (ctx) {
      const args = ctx.opts.requiredArgs('ipfs-path')
      const recursive = ctx.opts.bool('recursive', true)
      const added = []
      for (const raw of args) {
        const cid = await resolveToCid(ctx, raw)
        ctx.subject = cid.toString()
        await pins.add(cid, recursive, ctx.fetchOptions)
        added.push(formatCid(cid))
      }
      sendJson(ctx, { Pins: added })
    },

    /** `pin/rm`: remove recursive (default) or direct pins. */
    async 'pin/rm' (ctx) {
      const args = ctx.opts.requiredArgs('ipfs-path')
      const recursive = ctx.opts.bool('recursive', true)
      const removed = []
      for (const raw of args) {
        const cid = await resolveToCid(ctx, raw)
        await pins.rm(cid, recursive, log)
        removed.push(formatCid(cid))
      }
      sendJson(ctx, { Pins: removed })
    },

    /**
     * `pin/ls`: `{"Keys":{cid:{"Type"}}}`, or NDJSON `{"Cid","Type"}` lines
     * with `stream=true`. With arguments, each must be pinned (with the
     * requested type).
     */
    async 'pin/ls' (ctx) {
      const type = ctx.opts.string('type', 'all')
      if (!PIN_TYPES.includes(type)) {
        throw clientError(`invalid type '${type}', must be one of {direct, indirect, recursive, all}`)
      }
      const stream = ctx.opts.bool('stream', false)
      const args = ctx.opts.args()
      const listing = args.length > 0 ? pinLsArgs(ctx, args, type) : pinLsAll(ctx, type)
      if (stream) {
        await sendNdjson(ctx, mapAsync(listing, p => ({ Cid: p.cid, Type: p.type })))
        return
      }
      const keys = {}
      for await (const p of listing) keys[p.cid] = { Type: p.type }
      sendJson(ctx, { Keys: keys })
    },

    /**
     * `repo/gc`: delete every block no pin holds (Helia's gc, under its
     * blockstore's write lock), one `{"Key":{"/":cid}}` line per block
     * deleted, as Kubo streams them.
     */
    async 'repo/gc' (ctx) {
      const deleted = []
      await helia.gc({
        signal: ctx.signal,
        onProgress: (event) => {
          if (event.type === 'helia:gc:deleted') deleted.push({ Key: { '/': event.detail.toString() } })
        }
      })
      await sendNdjson(ctx, deleted)
    },

    /** `version`: identifies this daemon while keeping Kubo's keys. */
    async version (ctx) {
      sendJson(ctx, {
        Version: `0.0.0-ovig-ipfsd-helia-${HELIA_VERSION}`,
        Commit: '',
        Repo: '',
        System: `${goArch(process.arch)}/${process.platform}`,
        Golang: ''
      })
    },

    /** `id`: this node's identity, or a known peer's with an argument. */
    async id (ctx) {
      const libp2p = helia.libp2p
      const [arg] = ctx.opts.args()
      if (arg == null || arg === libp2p.peerId.toString()) {
        sendJson(ctx, {
          ID: libp2p.peerId.toString(),
          PublicKey: Buffer.from(publicKeyToProtobuf(libp2p.peerId.publicKey)).toString('base64'),
          Addresses: libp2p.getMultiaddrs().map(String),
          AgentVersion: AGENT_VERSION,
          Protocols: [...libp2p.getProtocols()].sort()
        })
        return
      }
      sendJson(ctx, await describePeer(libp2p, arg))
    },

    /** `swarm/connect`: dial peers by full multiaddr (with /p2p/). */
    async 'swarm/connect' (ctx) {
      const args = ctx.opts.requiredArgs('address')
      const strings = []
      for (const raw of args) {
        const { ma, peer } = parsePeerAddr(raw)
        try {
          await helia.libp2p.dial(ma, { signal: ctx.signal })
        } catch (err) {
          throw serverError(`connect ${peer} failure: ${ctx.deadlineExceeded ? 'context deadline exceeded' : err.message}`)
        }
        strings.push(`connect ${peer} success`)
      }
      sendJson(ctx, { Strings: strings })
    },

    /** `swarm/peers`: open connections. */
    async 'swarm/peers' (ctx) {
      const peers = helia.libp2p.getConnections().map(conn => ({
        Addr: conn.remoteAddr.toString().replace(/\/p2p\/[^/]+$/, ''),
        Peer: conn.remotePeer.toString()
      }))
      sendJson(ctx, { Peers: peers })
    },

    /** `shutdown`: answer, then stop like on SIGTERM. */
    async shutdown (ctx) {
      ctx.res.once('finish', () => requestShutdown())
      ctx.res.writeHead(200, { 'Content-Length': 0 })
      ctx.res.end()
    }
  }

  /**
   * @param {import('./http.mjs').RequestContext} ctx
   * @param {string} type
   * @returns {AsyncGenerator<{ cid: string, type: string }>}
   */
  async function * pinLsAll (ctx, type) {
    const listed = new Set()
    for await (const pin of pins.roots()) {
      if (type === 'all' || type === pin.type) {
        listed.add(pin.cid.toV1().toString())
        yield { cid: formatCid(pin.cid), type: pin.type }
      } else if (pin.type === 'recursive') {
        listed.add(pin.cid.toV1().toString())
      }
    }
    if (type === 'all' || type === 'indirect') {
      for await (const cid of pins.indirect(listed, ctx.signal)) {
        yield { cid: formatCid(cid), type: 'indirect' }
      }
    }
  }

  /**
   * @param {import('./http.mjs').RequestContext} ctx
   * @param {string[]} args
   * @param {string} type
   * @returns {AsyncGenerator<{ cid: string, type: string }>}
   */
  async function * pinLsArgs (ctx, args, type) {
    const resolved = []
    for (const raw of args) resolved.push({ raw, cid: await resolveToCid(ctx, raw) })
    for (const { raw, cid } of resolved) {
      const pin = await pins.get(cid)
      if (pin != null && (type === 'all' || type === pin.type)) {
        yield { cid: formatCid(cid), type: pin.type }
        continue
      }
      if (type === 'all' || type === 'indirect') {
        const via = await pins.indirectVia(cid, ctx.signal)
        if (via != null) {
          yield { cid: formatCid(cid), type: `indirect through ${formatCid(via)}` }
          continue
        }
      }
      throw serverError(`path '${raw}' is not pinned`)
    }
  }
}

/**
 * Bytes [offset, offset + wanted) of the concatenation of `files`.
 *
 * @param {import('ipfs-unixfs-exporter').UnixFSEntry[]} files
 * @param {number} offset
 * @param {bigint} wanted
 * @param {import('./http.mjs').RequestContext} ctx
 */
async function * catRange (files, offset, wanted, ctx) {
  let skip = BigInt(offset)
  let left = wanted
  for (const file of files) {
    if (left <= 0n) return
    if (skip >= file.size) {
      skip -= file.size
      continue
    }
    const length = minBig(left, file.size - skip)
    ctx.subject = file.cid.toString()
    yield * file.content({ ...ctx.fetchOptions, offset: Number(skip), length: Number(length), blockReadConcurrency: CAT_READ_AHEAD })
    left -= length
    skip = 0n
  }
}

/**
 * @param {string} raw
 * @returns {{ ma: import('@multiformats/multiaddr').Multiaddr, peer: string }}
 */
function parsePeerAddr (raw) {
  let ma
  try {
    ma = multiaddr(raw)
  } catch (err) {
    throw clientError(`invalid multiaddr "${raw}": ${err.message}`)
  }
  const p2p = ma.getComponents().findLast(c => c.name === 'p2p')
  if (p2p?.value == null) {
    throw clientError(`invalid peer address "${raw}": missing /p2p/<peer id>`)
  }
  if (!isLoopbackAddr(ma)) {
    // checked before libp2p sees it: a /dns or /dnsaddr address would be
    // resolved through the network before the connection gater runs
    throw serverError(`connect ${p2p.value} failure: ipfsd only dials loopback addresses (/ip4/127.x.x.x or /ip6/::1)`)
  }
  return { ma, peer: p2p.value }
}

/**
 * `id <peer>` for a peer in the peer store.
 *
 * @param {import('@libp2p/interface').Libp2p} libp2p
 * @param {string} arg
 */
async function describePeer (libp2p, arg) {
  let peerId
  try {
    peerId = peerIdFromString(arg)
  } catch (err) {
    throw clientError(`invalid peer id "${arg}": ${err.message}`)
  }
  let peer
  try {
    peer = await libp2p.peerStore.get(peerId)
  } catch {
    throw serverError('routing: not found')
  }
  const agent = peer.metadata.get('AgentVersion')
  return {
    ID: peerId.toString(),
    PublicKey: peerId.publicKey == null ? '' : Buffer.from(publicKeyToProtobuf(peerId.publicKey)).toString('base64'),
    Addresses: peer.addresses.map(a => a.multiaddr.encapsulate(`/p2p/${peerId}`).toString()),
    AgentVersion: agent == null ? '' : new TextDecoder().decode(agent),
    Protocols: [...peer.protocols].sort()
  }
}

/** @param {string} arch */
function goArch (arch) {
  return { x64: 'amd64', ia32: '386', arm64: 'arm64', arm: 'arm' }[arch] ?? arch
}

/**
 * @param {bigint} a
 * @param {bigint} b
 */
function minBig (a, b) {
  return a < b ? a : b
}

/**
 * @template T, U
 * @param {AsyncIterable<T>} source
 * @param {(v: T) => U} fn
 */
async function * mapAsync (source, fn) {
  for await (const v of source) yield fn(v)
}
