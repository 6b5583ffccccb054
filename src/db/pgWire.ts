/**
 * The few bits of the PostgreSQL wire protocol (v3) the embedded database's SQL socket needs to read and write itself.
 * Everything else passes through to PGlite untouched.
 */

/** Frontend message type byte; 0 for the untyped startup message. */
export function frontendMessageType(message: Uint8Array): string {
  return String.fromCharCode(message[0] ?? 0);
}

export const TERMINATE = 'X';

/**
 * What a client may send once authenticated, as PostgreSQL's PostgresMain reads it: Bind, Close, CopyDone, Describe,
 * CopyData, Execute, FunctionCall, CopyFail, Flush, Parse, Query, Sync, Terminate.
 */
const FRONTEND_TYPES = new Set(['B', 'C', 'c', 'D', 'd', 'E', 'F', 'f', 'H', 'P', 'Q', 'S', 'X']);

/**
 * Why an authenticated client's message must not reach the backend (PostgreSQL ends the connection over it with FATAL
 * 08P01), or null when it may.
 * Warning: PGlite, handed a message of any other type, answers FATAL "protocol synchronization was lost" over and
 * over without returning, and the process it runs in never runs anything else again.
 */
export function invalidFrontendMessage(message: Uint8Array): string | null {
  if (!FRONTEND_TYPES.has(frontendMessageType(message))) return `invalid frontend message type ${message[0] ?? 0}`;
  const buffer = Buffer.from(message.buffer, message.byteOffset, message.byteLength);
  if (buffer.length < 5 || buffer.readInt32BE(1) !== buffer.length - 1) return 'invalid message length';
  return null;
}

/**
 * Which COPY a Query or Parse message asks for that the embedded database cannot serve, or null:
 * - `stdin`, COPY … FROM STDIN: PGlite answers CopyInResponse, then reads the copy data from the same message at once,
 *   finds none, and ends its backend ("unexpected EOF on client connection … protocol synchronization was lost"), in a
 *   loop that never returns to the process;
 * - `program`, COPY … TO PROGRAM or FROM PROGRAM: there is no program to run in WebAssembly, and PGlite never answers;
 *   its backend was left spinning, or failing every later query with "ERRORDATA_STACK_SIZE exceeded", until a restart.
 * Literals, quoted names and comments are blanked first, so a reply text that speaks of copying from stdin is no COPY.
 */
export function unservableCopy(message: Uint8Array): 'stdin' | 'program' | null {
  const type = frontendMessageType(message);
  if (type !== 'Q' && type !== 'P') return null;
  const buffer = Buffer.from(message.buffer, message.byteOffset, message.byteLength);
  let start = 5;
  // Parse: the statement's name comes first.
  if (type === 'P') start = buffer.indexOf(0, start) + 1;
  if (start <= 0) return null;
  const end = buffer.indexOf(0, start);
  const text = buffer.subarray(start, end < 0 ? buffer.length : end).toString('utf8');
  const copies = blankLiterals(text)
    .split(';')
    .filter((statement) => /^\s*copy\b/i.test(statement));
  if (copies.some((statement) => /\bfrom\s+stdin\b/i.test(statement))) return 'stdin';
  if (copies.some((statement) => /\b(?:to|from)\s+program\b/i.test(statement))) return 'program';
  return null;
}

/** SQL with its string literals, quoted identifiers and comments replaced by spaces (PostgreSQL's lexical rules). */
export function blankLiterals(sql: string): string {
  let out = '';
  let i = 0;
  while (i < sql.length) {
    const c = sql[i]!;
    const next = sql[i + 1];
    let end = i + 1;
    if (c === '-' && next === '-') {
      end = sql.indexOf('\n', i);
      end = end < 0 ? sql.length : end;
    } else if (c === '/' && next === '*') {
      // Block comments nest.
      let depth = 0;
      for (end = i; end < sql.length; end++) {
        if (sql.startsWith('/*', end)) {
          depth++;
          end++;
        } else if (sql.startsWith('*/', end)) {
          depth--;
          end++;
          if (depth === 0) break;
        }
      }
      end = Math.min(sql.length, end + 1);
    } else if (c === "'" || c === '"') {
      // '' (or "") inside doubles the quote; after E (an escape string) a backslash escapes the next character.
      const escapes = c === "'" && /[eE]/.test(sql[i - 1] ?? '') && !/[\w$]/.test(sql[i - 2] ?? '');
      for (end = i + 1; end < sql.length; end++) {
        if (escapes && sql[end] === '\\') end++;
        else if (sql[end] === c) {
          if (sql[end + 1] === c) end++;
          else break;
        }
      }
      end = Math.min(sql.length, end + 1);
    } else if (c === '$' && !/[\w$]/.test(sql[i - 1] ?? '')) {
      const tag = /^\$(?:[A-Za-z_\u0080-\uffff][\w\u0080-\uffff]*)?\$/.exec(sql.slice(i));
      if (tag) {
        const close = sql.indexOf(tag[0], i + tag[0].length);
        end = close < 0 ? sql.length : close + tag[0].length;
      }
    }
    out += end === i + 1 ? c : ' '.repeat(end - i);
    i = end;
  }
  return out;
}

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

/** Protocol 3.0, as a startup message gives it. */
export const PROTOCOL_3_0 = 196608;

/**
 * The declared length of each message a client sends, from the first byte of its connection: the untyped ones first
 * (SSLRequest, GSSENCRequest, CancelRequest, StartupMessage: a length, then a code), every one after a protocol 3.0
 * StartupMessage typed (a type byte, then a length). Reads only the headers: a message's body is skipped as it passes.
 */
export class FrontendMessageLengths {
  #header = Buffer.alloc(0);
  /** Bytes of the current message's body still to come. */
  #remaining = 0;
  #typed = false;

  /** Takes the next chunk of the stream; returns the first declared length above `max` (bytes), or null. */
  push(chunk: Uint8Array, max: number): number | null {
    let over: number | null = null;
    let i = 0;
    while (i < chunk.length) {
      if (this.#remaining > 0) {
        const take = Math.min(this.#remaining, chunk.length - i);
        i += take;
        this.#remaining -= take;
        continue;
      }
      const headerLength = this.#typed ? 5 : 8;
      const take = Math.min(headerLength - this.#header.length, chunk.length - i);
      this.#header = Buffer.concat([this.#header, chunk.subarray(i, i + take)]);
      i += take;
      if (this.#header.length < headerLength) break;
      // The length counts itself (and an untyped message's code: the whole header), never the type byte.
      const length = this.#header.readInt32BE(this.#typed ? 1 : 0);
      this.#remaining = Math.max(0, length - (this.#typed ? 4 : 8));
      if (!this.#typed && this.#header.readInt32BE(4) === PROTOCOL_3_0) this.#typed = true;
      this.#header = Buffer.alloc(0);
      if (length > max) over ??= length;
    }
    return over;
  }
}

/** The parameters of a StartupMessage (user, database, options …); null when the message is not one. */
export function startupParameters(message: Uint8Array): Record<string, string> | null {
  const buffer = Buffer.from(message.buffer, message.byteOffset, message.byteLength);
  if (buffer.length < 9 || buffer.readInt32BE(0) !== buffer.length || buffer.readInt32BE(4) !== PROTOCOL_3_0) return null;
  const fields = buffer.subarray(8, buffer.length - 1).toString('utf8').split('\0');
  const parameters: Record<string, string> = {};
  for (let i = 0; i + 1 < fields.length; i += 2) parameters[fields[i]!] = fields[i + 1]!;
  return parameters;
}

/** AuthenticationSASL (the mechanisms offered), AuthenticationSASLContinue and AuthenticationSASLFinal. */
export function authenticationSasl(mechanisms: readonly string[]): Uint8Array {
  return typed('R', [int32(10), ...mechanisms.map(cstring), Buffer.of(0)]);
}

export function authenticationSaslContinue(data: string): Uint8Array {
  return typed('R', [int32(11), Buffer.from(data, 'utf8')]);
}

export function authenticationSaslFinal(data: string): Uint8Array {
  return typed('R', [int32(12), Buffer.from(data, 'utf8')]);
}

/**
 * The body of a password message ('p'): a SASLInitialResponse (mechanism and data) when `initial`, a SASLResponse
 * (data) otherwise; null when the message is not a well-formed one.
 */
export function saslResponse(message: Uint8Array, initial: boolean): { mechanism: string | null; data: string } | null {
  const buffer = Buffer.from(message.buffer, message.byteOffset, message.byteLength);
  if (buffer.length < 5 || frontendMessageType(message) !== 'p' || buffer.readInt32BE(1) !== buffer.length - 1) return null;
  const body = buffer.subarray(5);
  if (!initial) return { mechanism: null, data: body.toString('utf8') };
  const end = body.indexOf(0);
  if (end === -1 || body.length < end + 5) return null;
  const length = body.readInt32BE(end + 1);
  const data = body.subarray(end + 5);
  if (length !== data.length) return null;
  return { mechanism: body.subarray(0, end).toString('utf8'), data: data.toString('utf8') };
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

function int32(value: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(value);
  return b;
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
