/**
 * `add`: stream multipart file parts straight into the UnixFS importer with
 * Kubo's import parameters, so CIDs equal Kubo's and a large upload is never
 * held in memory (busboy's per-file stream is consumed by the chunker with
 * back-pressure).
 *
 * Kubo's defaults (what `ipfs add` does with no flags), passed explicitly
 * because Helia's `unixfs.addByteStream` defaults differ (CIDv1, raw leaves,
 * 1 MiB chunks, 1024 links per node):
 *   - fixed-size chunker, 262144 bytes (`chunker=size-N` overrides)
 *   - balanced layout, at most 174 links per node
 *   - CIDv0 and dag-pb leaves; `cid-version=1` implies raw leaves unless
 *     `raw-leaves` is given
 *   - a file that fits in one chunk is that chunk's block itself
 *     (`reduceSingleLeafToSelf`), a raw block with raw leaves
 *
 * The leaf encoder is our own (leanBufferImporter): the importer's default
 * keeps each dag-pb leaf's UnixFS object, chunk bytes included, until its
 * parent node is built, i.e. up to 174 x 256 KiB per level of the tree.
 */
import * as dagPb from '@ipld/dag-pb'
import busboy from 'busboy'
import { UnixFS } from 'ipfs-unixfs'
import { importer } from 'ipfs-unixfs-importer'
import { fixedSize } from 'ipfs-unixfs-importer/chunker'
import { balanced } from 'ipfs-unixfs-importer/layout'
import { pushable } from 'it-pushable'
import last from 'it-last'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { sha256 } from 'multiformats/hashes/sha2'
import { discardingBlockstore } from './dag.mjs'
import { DispositionFixer, boundaryOf } from './multipart-compat.mjs'
import { clientError, formatCid } from './kubo.mjs'

const KUBO_MAX_LINKS = 174
const DEFAULT_CHUNK_SIZE = 262144
const MAX_CHUNK_SIZE = 1048576

/**
 * @typedef {object} AddOptions
 * @property {0 | 1} cidVersion
 * @property {boolean} rawLeaves
 * @property {number} chunkSize
 * @property {boolean} pin
 * @property {boolean} onlyHash
 */

/**
 * Validate the `add` query options (400 on anything unsupported).
 *
 * @param {import('./kubo.mjs').Options} opts
 * @returns {AddOptions}
 */
export function parseAddOptions (opts) {
  const cidVersion = opts.int('cid-version', 0)
  if (cidVersion !== 0 && cidVersion !== 1) {
    throw clientError(`unknown CID version: ${cidVersion}`)
  }
  const hash = opts.string('hash', 'sha2-256')
  if (hash !== 'sha2-256') {
    throw clientError(`hash "${hash}" is not supported by ipfsd (only sha2-256)`)
  }
  for (const flag of ['wrap-with-directory', 'trickle', 'nocopy', 'inline', 'raw-leaves-only']) {
    if (opts.bool(flag, false)) throw clientError(`${flag}=true is not supported by ipfsd`)
  }
  // accepted and ignored: progress lines are never emitted; quiet/quieter/silent
  // only affect Kubo's CLI rendering
  opts.bool('progress', false)
  opts.bool('quiet', false)
  return {
    cidVersion,
    rawLeaves: opts.bool('raw-leaves', cidVersion === 1),
    chunkSize: parseChunker(opts.string('chunker', `size-${DEFAULT_CHUNK_SIZE}`)),
    pin: opts.bool('pin', true),
    onlyHash: opts.bool('only-hash', false)
  }
}

/**
 * @param {string} spec  Kubo chunker string; only `size-N` is supported
 * @returns {number}
 */
function parseChunker (spec) {
  const match = /^size-(\d+)$/.exec(spec)
  if (match == null) {
    throw clientError(`chunker "${spec}" is not supported by ipfsd (only size-N)`)
  }
  const size = Number(match[1])
  if (size <= 0) throw clientError('chunker size must be greater than 0')
  if (size > MAX_CHUNK_SIZE) {
    throw clientError(`chunker parameters may not exceed the maximum chunk size of ${MAX_CHUNK_SIZE}`)
  }
  return size
}

/**
 * Import every file part of the request body, in order. Yields Kubo's
 * `{"Name","Hash","Size"}` object per file as soon as it is imported (and
 * pinned).
 *
 * @param {import('./http.mjs').RequestContext} ctx
 * @param {AddOptions} options
 * @param {object} deps
 * @param {import('interface-blockstore').Blockstore} deps.blockstore
 * @param {(cid: import('multiformats/cid').CID) => Promise<void>} deps.pin
 */
export async function * addFromMultipart (ctx, options, { blockstore, pin }) {
  const { req } = ctx
  if (!/^multipart\/form-data/i.test(req.headers['content-type'] ?? '')) {
    throw clientError('argument "path" is required (send the file as multipart/form-data)')
  }
  let parser
  try {
    parser = busboy({ headers: req.headers, preservePath: true, defParamCharset: 'utf8' })
  } catch (err) {
    throw clientError(`invalid multipart request: ${err.message}`)
  }
  const target = options.onlyHash ? discardingBlockstore : blockstore

  /** @type {import('it-pushable').Pushable<Promise<object>>} */
  const jobs = pushable({ objectMode: true })
  let accepting = true
  const enqueue = (promise) => {
    promise.catch(() => {}) // awaited in order below; avoid an unhandled rejection meanwhile
    jobs.push(promise)
  }
  const reject = (err) => {
    accepting = false
    jobs.end(err)
  }

  parser.on('file', (_field, stream, info) => {
    if (!accepting) {
      stream.resume()
      return
    }
    if (info.mimeType === 'application/x-directory') {
      stream.resume()
      reject(clientError('directories are not supported by ipfsd; add files one by one'))
      return
    }
    ctx.signal.addEventListener('abort', () => stream.destroy(), { once: true })
    enqueue(importOne(stream, decodeFileName(info.filename)))
  })
  parser.on('field', (_field, value, info) => {
    if (!accepting) return
    if (info.valueTruncated) {
      reject(clientError('a multipart part without filename must be under 1 MiB; send it as a file'))
      return
    }
    enqueue(importOne([Buffer.from(value)], ''))
  })
  parser.on('close', () => jobs.end())
  parser.on('error', (err) => reject(clientError(`invalid multipart body: ${err.message}`)))
  const fixer = new DispositionFixer(boundaryOf(req.headers['content-type']) ?? '')
  req.pipe(fixer).pipe(parser)

  /**
   * @param {AsyncIterable<Uint8Array> | Iterable<Uint8Array>} content
   * @param {string} name
   */
  async function importOne (content, name) {
    const entry = await last(importer([{ content }], target, {
      cidVersion: options.cidVersion,
      rawLeaves: options.rawLeaves,
      leafType: 'file',
      reduceSingleLeafToSelf: true,
      chunker: fixedSize({ chunkSize: options.chunkSize }),
      layout: balanced({ maxChildrenPerNode: KUBO_MAX_LINKS }),
      bufferImporter: leanBufferImporter(options, ctx.signal),
      wrapWithDirectory: false,
      signal: ctx.signal
    }))
    if (entry == null) throw new Error('importer produced no result')
    if (options.pin && !options.onlyHash) await pin(entry.cid)
    const hash = formatCid(entry.cid)
    return { Name: name === '' ? hash : name, Hash: hash, Size: entry.size.toString() }
  }

  let count = 0
  try {
    for await (const job of jobs) {
      yield await job
      count++
    }
    if (count === 0) throw clientError('argument "path" is required')
  } finally {
    if (!req.complete) {
      req.unpipe(fixer)
      fixer.unpipe(parser)
      req.resume()
    }
  }
}

/**
 * Encode and store each chunk as a leaf: a raw block (raw leaves) or a
 * dag-pb node holding a UnixFS `file` with the bytes (CIDv0 style), exactly
 * as the importer's default buffer importer does. The UnixFS object handed
 * back to the importer carries only the chunk's size (as `blockSizes`),
 * not its bytes, which is all the parent node needs (`fileSize()`), so
 * chunk bytes become garbage as soon as the block is written.
 *
 * @param {AddOptions} options
 * @param {AbortSignal} signal
 * @returns {import('ipfs-unixfs-importer').BufferImporter}
 */
function leanBufferImporter ({ cidVersion, rawLeaves }, signal) {
  return async function * (file, blockstore) {
    // Identical chunks (zero-filled regions, repeated tensors) give one block. Helia's blockstore
    // serialises concurrent puts of one CID slowly (about 0.3 s each), so each block of a file is
    // put once and later copies wait for that put.
    /** @type {Map<string, Promise<unknown>>} */
    const puts = new Map()
    for await (const chunk of file.content) {
      yield async () => {
        const block = rawLeaves
          ? chunk
          : dagPb.encode({ Data: new UnixFS({ type: 'file', data: chunk }).marshal(), Links: [] })
        const cid = CID.create(rawLeaves ? 1 : cidVersion, rawLeaves ? raw.code : dagPb.code, await sha256.digest(block))
        const key = cid.toString()
        if (!puts.has(key)) puts.set(key, blockstore.put(cid, block, { signal }))
        await puts.get(key)
        return {
          cid,
          size: BigInt(block.length),
          block,
          unixfs: rawLeaves ? undefined : new UnixFS({ type: 'file', blockSizes: [BigInt(chunk.length)] })
        }
      }
    }
  }
}

/**
 * Kubo URL-unescapes multipart file names (Go's url.QueryUnescape).
 *
 * @param {string | undefined} name
 */
function decodeFileName (name) {
  if (name == null) return ''
  try {
    return decodeURIComponent(name.replace(/\+/g, ' '))
  } catch {
    return name
  }
}
