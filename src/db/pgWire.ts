/**
 * The few bits of the PostgreSQL wire protocol (v3) the embedded database's SQL socket needs to read and write itself.
 * Everything else passes through to PGlite untouched.
 */

/** Frontend message type byte; 0 for the untyped startup message. */
export function frontendMessageType(message: Uint8Array): string {
  return String.fromCharCode(message[0] ?? 0);
}

export const TERMINATE = 'X';

/** Sync: ends an extended-query cycle; the backend answers ReadyForQuery. */
export const SYNC_MESSAGE = Uint8Array.of(0x53, 0, 0, 0, 4);

/** CopyFail: aborts a COPY FROM STDIN; ignored by a backend that is not copying. */
export function copyFailMessage(reason: string): Uint8Array {
  return typed('f', [cstring(reason)]);
}

/** ErrorResponse, e.g. a FATAL 53300 before closing a connection over the limit. */
export function errorResponse(severity: 'ERROR' | 'FATAL', code: string, message: string): Uint8Array {
  const field = (tag: string, value: string) => Buffer.concat([Buffer.from(tag, 'latin1'), cstring(value)]);
  return typed('E', [field('S', severity), field('V', severity), field('C', code), field('M', message), Buffer.of(0)]);
}

export type TransactionStatus = 'I' | 'T' | 'E';

/**
 * Follows a backend's output stream, which arrives in chunks that need not align with messages, and remembers the
 * transaction status of the last ReadyForQuery ('Z'): 'I' idle, 'T' in a transaction block, 'E' in a failed one.
 */
export class ReadyForQueryTracker {
  #header = Buffer.alloc(0);
  /** Bytes of the current message's body still to come. */
  #remaining = 0;
  #inReady = false;
  #status: TransactionStatus | null = null;
  /** Increments at each ReadyForQuery, so a caller can tell whether one arrived since it last looked. */
  #count = 0;

  get status(): TransactionStatus | null {
    return this.#status;
  }

  get count(): number {
    return this.#count;
  }

  push(chunk: Uint8Array): void {
    let i = 0;
    while (i < chunk.length) {
      if (this.#remaining > 0) {
        const take = Math.min(this.#remaining, chunk.length - i);
        if (this.#inReady) {
          // The body of ReadyForQuery is its one status byte.
          this.#status = String.fromCharCode(chunk[i]!) as TransactionStatus;
          this.#count += 1;
          this.#inReady = false;
        }
        i += take;
        this.#remaining -= take;
        continue;
      }
      const take = Math.min(5 - this.#header.length, chunk.length - i);
      this.#header = Buffer.concat([this.#header, chunk.subarray(i, i + take)]);
      i += take;
      if (this.#header.length < 5) break;
      this.#inReady = this.#header[0] === 0x5a; // 'Z'
      this.#remaining = this.#header.readInt32BE(1) - 4;
      this.#header = Buffer.alloc(0);
    }
  }
}

function cstring(value: string): Buffer {
  return Buffer.concat([Buffer.from(value, 'utf8'), Buffer.of(0)]);
}

function typed(type: string, parts: Buffer[]): Uint8Array {
  const body = Buffer.concat(parts);
  const header = Buffer.alloc(5);
  header.write(type, 0, 'latin1');
  header.writeInt32BE(body.length + 4, 1);
  return new Uint8Array(Buffer.concat([header, body]));
}
