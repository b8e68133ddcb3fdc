/**
 * DAG helpers that Helia does not offer in the shape Kubo's commands need:
 * a parallel walk (to fetch a whole DAG over bitswap quickly before pinning,
 * and to enumerate indirect pins) and a blockstore wrapper that tags errors
 * with the CID of the block that failed.
 */
import * as dagPb from '@ipld/dag-pb'
import drain from 'it-drain'
import toBuffer from 'it-to-buffer'
import { createUnsafe } from 'multiformats/block'
import * as raw from 'multiformats/codecs/raw'

/**
 * Walk the DAG below `root` breadth-first, loading up to `concurrency`
 * blocks at a time, and yield every CID reached (root included, each once).
 *
 * @param {object} opts
 * @param {Pick<import('interface-blockstore').Blockstore, 'get' | 'has'>} opts.blockstore
 * @param {import('multiformats/cid').CID} opts.root
 * @param {(code: number) => Promise<import('multiformats').BlockCodec<any, any>>} opts.getCodec
 * @param {AbortSignal} [opts.signal]
 * @param {boolean} [opts.offline]
 * @param {number} [opts.concurrency]
 * @param {boolean} [opts.loadLeaves] also load raw leaves (needed to fetch them;
 *   not needed to list them, since raw blocks have no links)
 * @param {boolean} [opts.skipMissing] a block that cannot be loaded ends its
 *   branch instead of failing the walk (it is still yielded)
 * @returns {AsyncGenerator<import('multiformats/cid').CID>}
 */
export async function * walkDag ({ blockstore, root, getCodec, signal, offline = false, concurrency = 16, loadLeaves = true, skipMissing = false }) {
  const seen = new Set([root.toV1().toString()])
  let frontier = [root]
  while (frontier.length > 0) {
    const next = []
    for (let i = 0; i < frontier.length; i += concurrency) {
      const batch = frontier.slice(i, i + concurrency)
      const children = await Promise.all(batch.map(cid => linksOf(cid)))
      for (const [n, cid] of batch.entries()) {
        yield cid
        for (const child of children[n]) {
          const key = child.toV1().toString()
          if (!seen.has(key)) {
            seen.add(key)
            next.push(child)
          }
        }
      }
    }
    frontier = next
  }

  /** @param {import('multiformats/cid').CID} cid */
  async function linksOf (cid) {
    try {
      return await loadLinks(cid)
    } catch (err) {
      if (skipMissing && signal?.aborted !== true) return []
      throw err
    }
  }

  /** @param {import('multiformats/cid').CID} cid */
  async function loadLinks (cid) {
    const options = { signal, offline }
    if (cid.code === raw.code) {
      // a raw block has no links: load it only to fetch it, if it is missing
      if (loadLeaves && !await blockstore.has(cid, options)) await drain(blockstore.get(cid, options))
      return []
    }
    const bytes = await toBuffer(blockstore.get(cid, options))
    if (cid.code === dagPb.code) {
      return dagPb.decode(bytes).Links.map(link => link.Hash)
    }
    const block = createUnsafe({ cid, bytes, codec: await getCodec(cid.code) })
    return [...block.links()].map(([, linked]) => linked)
  }
}

/**
 * Wrap a blockstore so that a failing `get` annotates the error with the
 * CID it was asked for (Helia's offline error does not name the block).
 *
 * @template {Pick<import('interface-blockstore').Blockstore, 'get' | 'has' | 'put'>} B
 * @param {B} blockstore
 */
export function errorTaggingBlockstore (blockstore) {
  return {
    async * get (cid, options) {
      try {
        yield * blockstore.get(cid, options)
      } catch (err) {
        tagError(err, cid)
        throw err
      }
    },
    has: (cid, options) => blockstore.has(cid, options),
    put: (cid, bytes, options) => blockstore.put(cid, bytes, options)
  }
}

function tagError (err, cid) {
  if (err != null && typeof err === 'object' && err.cid == null) {
    try {
      err.cid = cid
    } catch {
      // frozen error objects keep their message only
    }
  }
}

/**
 * A blockstore that stores nothing: used for `add?only-hash=true`.
 */
export const discardingBlockstore = {
  put: async (cid) => cid,
  has: async () => false,
  // eslint-disable-next-line require-yield
  async * get (cid) {
    throw new Error(`block ${cid} was not stored (only-hash)`)
  }
}
