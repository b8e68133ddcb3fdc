/**
 * Kubo accepts multipart parts whose header reads
 * `Content-Disposition: file; filename="..."` (written by older Kubo/go-ipfs
 * clients and some Python clients); busboy skips every part whose
 * disposition type is not `form-data`. This stream rewrites the disposition
 * type of part headers only (never file content) from `file` to
 * `form-data`, so busboy sees those parts as files.
 *
 * It scans for the delimiter `\r\n--<boundary>` with Buffer.indexOf, holds
 * back at most one delimiter's length of bytes between chunks, and edits
 * the (small) header block that follows each delimiter.
 */
import { Transform } from 'node:stream'

const HEADER_END = Buffer.from('\r\n\r\n')
const MAX_HEADER_BYTES = 16 * 1024

/**
 * @param {string | undefined} contentType  the request's Content-Type
 * @returns {string | undefined}
 */
export function boundaryOf (contentType) {
  const match = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType ?? '')
  return match?.[1] ?? match?.[2]
}

export class DispositionFixer extends Transform {
  /** @param {string} boundary */
  constructor (boundary) {
    super()
    this.delimiter = Buffer.from(`\r\n--${boundary}`)
    // the body starts with "--boundary" (no CRLF): search as if a CRLF
    // preceded it, and drop those 2 virtual bytes on output
    this.pending = Buffer.from('\r\n')
    this.skip = 2
    this.inHeaders = false
  }

  _transform (chunk, _encoding, callback) {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk])
    this.process(false)
    callback()
  }

  _flush (callback) {
    this.process(true)
    if (this.pending.length > 0) this.out(this.pending)
    this.pending = Buffer.alloc(0)
    callback()
  }

  /** @param {boolean} final */
  process (final) {
    for (;;) {
      if (this.inHeaders) {
        const end = this.pending.indexOf(HEADER_END)
        if (end === -1) {
          if (this.pending.length > MAX_HEADER_BYTES || final) this.inHeaders = false
          return
        }
        const headers = this.pending.subarray(0, end).toString('latin1')
        this.out(Buffer.from(headers.replace(/^(content-disposition:[ \t]*)file(?=[ \t]*(;|$))/im, '$1form-data'), 'latin1'))
        this.pending = this.pending.subarray(end)
        this.inHeaders = false
        continue
      }
      const at = this.pending.indexOf(this.delimiter)
      if (at === -1) {
        // keep a possible partial delimiter for the next chunk
        const keep = final ? 0 : Math.min(this.pending.length, this.delimiter.length - 1)
        this.out(this.pending.subarray(0, this.pending.length - keep))
        this.pending = this.pending.subarray(this.pending.length - keep)
        return
      }
      const cut = at + this.delimiter.length
      this.out(this.pending.subarray(0, cut))
      this.pending = this.pending.subarray(cut)
      this.inHeaders = true
    }
  }

  /** Push `buf`, minus the virtual leading CRLF if still pending. */
  out (buf) {
    if (this.skip > 0) {
      const drop = Math.min(this.skip, buf.length)
      this.skip -= drop
      buf = buf.subarray(drop)
    }
    if (buf.length > 0) this.push(buf)
  }
}
