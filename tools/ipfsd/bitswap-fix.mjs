/**
 * Work-around for a stall in @helia/bitswap 4.0.19 (the version helia
 * 7.1.15 installs), on the side that serves blocks.
 *
 * The server keeps, per peer, a ledger of wanted CIDs. Once it has sent a
 * block the entry stays, status "sent", until it expires (5 s) AND the peer
 * sends another message; Helia clients never send cancels. If that peer
 * wants the same CID again (it does so when a request was aborted, e.g. by
 * `timeout`, while the block was on the wire: the late block is dropped and
 * the next request wants it again), `addWants` only refreshes the stale
 * entry, which is then expired and deleted without being sent. The client
 * never repeats a want, so its next `cat`/`pin add` of that DAG hangs until
 * its own deadline. Seen here as: a `cat` cut by `timeout=700ms`, then a
 * full `cat` of the same CID stalling forever at the same byte.
 *
 * Fix: when a want arrives for a CID whose ledger entry was already sent,
 * forget the entry first, so it is treated (and answered) as a new want.
 * Re-sending a block a peer asks for again is what Kubo does as well.
 */
import { CID } from 'multiformats/cid'
import { toString as uint8ArrayToString } from 'uint8arrays/to-string'

/**
 * Patch the Ledger class used by @helia/bitswap. Must run before the node
 * starts. Returns false (and changes nothing) if the installed version does
 * not have the expected shape.
 *
 * @returns {Promise<boolean>}
 */
export async function patchBitswapResend () {
  let Ledger
  try {
    const url = new URL('./peer-want-lists/ledger.js', import.meta.resolve('@helia/bitswap'))
    ;({ Ledger } = await import(url.href))
  } catch {
    return false
  }
  const original = Ledger?.prototype?.addWants
  if (typeof original !== 'function' || Ledger.prototype.addWants.ipfsdPatched === true) {
    return Ledger?.prototype?.addWants?.ipfsdPatched === true
  }

  function addWants (wantlist) {
    if (this.wants instanceof Map) {
      for (const entry of wantlist?.entries ?? []) {
        if (entry.cancel === true) continue
        const key = uint8ArrayToString(CID.decode(entry.cid).multihash.bytes, 'base64')
        if (this.wants.get(key)?.status === 'sent') this.wants.delete(key)
      }
    }
    return original.call(this, wantlist)
  }
  addWants.ipfsdPatched = true
  Ledger.prototype.addWants = addWants
  return true
}
