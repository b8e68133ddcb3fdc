/**
 * Kubo pinning semantics on top of Helia's pin store.
 *
 * Helia keys pins by CIDv1 and `pins.ls()` returns CIDv1, so the CID as the
 * user pinned it (CIDv0 `Qm...` stays `Qm...`) is kept in the pin metadata
 * under `kuboCid`. A recursive pin has depth Infinity, a direct pin depth 0.
 * Indirect pins are computed as Kubo does: by walking the recursive pins'
 * DAGs (local blocks only).
 */
import drain from 'it-drain'
import { CID } from 'multiformats/cid'
import { serverError } from './kubo.mjs'
import { walkDag } from './dag.mjs'

/**
 * @typedef {object} PinInfo
 * @property {CID} cid          as originally pinned
 * @property {'recursive' | 'direct'} type
 */

export class KuboPins {
  /** @param {import('helia').Helia} helia */
  constructor (helia) {
    this.helia = helia
  }

  /**
   * The pin whose root is `cid`, or undefined.
   *
   * @param {CID} cid
   * @returns {Promise<PinInfo | undefined>}
   */
  async get (cid) {
    try {
      const pin = await this.helia.pins.get(cid)
      return toPinInfo(pin, cid)
    } catch (err) {
      if (err.name === 'NotFoundError') return undefined
      throw err
    }
  }

  /**
   * All recursive and direct pins.
   *
   * @returns {AsyncGenerator<PinInfo>}
   */
  async * roots () {
    for await (const pin of this.helia.pins.ls()) {
      yield toPinInfo(pin, pin.cid)
    }
  }

  /**
   * Pin `cid` (fetching missing blocks first). Re-pinning is a no-op, a
   * direct pin is upgraded to recursive, and a recursive pin cannot be
   * downgraded, as in Kubo.
   *
   * @param {CID} cid
   * @param {boolean} recursive
   * @param {{ signal?: AbortSignal, offline?: boolean }} options
   */
  async add (cid, recursive, options) {
    const existing = await this.get(cid)
    if (existing?.type === 'recursive') {
      if (!recursive) throw serverError(`${cid} already pinned recursively`)
      return
    }
    if (existing?.type === 'direct' && !recursive) return

    if (recursive && options.offline !== true) {
      // fetch the whole DAG with parallel requests first: Helia's pin walker
      // loads one block at a time, which is slow over bitswap
      await drain(walkDag({ blockstore: this.helia.blockstore, root: cid, getCodec: this.helia.getCodec, ...options }))
    }
    if (existing?.type === 'direct') {
      await drain(this.helia.pins.rm(cid, { offline: true }))
    }
    try {
      await drain(this.helia.pins.add(cid, {
        ...options,
        depth: recursive ? Infinity : 0,
        metadata: { kuboCid: cid.toString() }
      }))
    } catch (err) {
      if (err.name === 'AlreadyPinnedError') return
      if (existing?.type === 'direct') {
        await drain(this.helia.pins.add(cid, { offline: true, depth: 0, metadata: { kuboCid: cid.toString() } })).catch(() => {})
      }
      throw err
    }
  }

  /**
   * Unpin `cid`. Kubo's errors: not pinned, or pinned recursively when a
   * direct unpin was asked.
   *
   * @param {CID} cid
   * @param {boolean} recursive
   * @param {(msg: string) => void} log
   */
  async rm (cid, recursive, log) {
    const existing = await this.get(cid)
    if (existing == null) throw serverError('not pinned or pinned indirectly')
    if (existing.type === 'recursive' && !recursive) throw serverError(`${cid} is pinned recursively`)
    try {
      // Helia deletes the pin first, then walks the DAG to update its block
      // reference counts; never go to the network for that walk
      await drain(this.helia.pins.rm(cid, { offline: true }))
    } catch (err) {
      if (await this.get(cid) != null) throw err
      log(`pin/rm ${cid}: pin removed, but reference counts of missing blocks were not updated: ${err.message}`)
    }
  }

  /**
   * CIDs indirectly pinned: descendants of recursive pins, excluding the
   * CIDs in `exclude` (already listed as recursive/direct), each once.
   *
   * @param {Set<string>} exclude  CIDv1 strings
   * @param {AbortSignal} signal
   * @returns {AsyncGenerator<CID>}
   */
  async * indirect (exclude, signal) {
    const emitted = new Set(exclude)
    for await (const pin of this.roots()) {
      if (pin.type !== 'recursive') continue
      for await (const cid of this.walkLocal(pin.cid, signal)) {
        const key = cid.toV1().toString()
        if (emitted.has(key)) continue
        emitted.add(key)
        yield cid
      }
    }
  }

  /**
   * The recursive pin through which `cid` is indirectly pinned, if any.
   *
   * @param {CID} cid
   * @param {AbortSignal} signal
   * @returns {Promise<CID | undefined>}
   */
  async indirectVia (cid, signal) {
    const wanted = cid.toV1().toString()
    for await (const pin of this.roots()) {
      if (pin.type !== 'recursive' || pin.cid.toV1().toString() === wanted) continue
      for await (const child of this.walkLocal(pin.cid, signal)) {
        if (child.toV1().toString() === wanted) return pin.cid
      }
    }
    return undefined
  }

  /**
   * Descendants of `root` (root excluded), from local blocks only; a
   * missing block ends its branch silently.
   *
   * @param {CID} root
   * @param {AbortSignal} signal
   */
  async * walkLocal (root, signal) {
    const walk = walkDag({
      blockstore: this.helia.blockstore,
      root,
      getCodec: this.helia.getCodec,
      signal,
      offline: true,
      loadLeaves: false,
      skipMissing: true
    })
    for await (const cid of walk) {
      if (!cid.equals(root)) yield cid
    }
  }
}

/**
 * @param {import('@helia/interface').Pin} pin
 * @param {CID} fallback
 * @returns {PinInfo}
 */
function toPinInfo (pin, fallback) {
  let cid = fallback
  if (typeof pin.metadata?.kuboCid === 'string') {
    try {
      cid = CID.parse(pin.metadata.kuboCid)
    } catch {
      cid = fallback
    }
  }
  return { cid, type: pin.depth === 0 ? 'direct' : 'recursive' }
}
