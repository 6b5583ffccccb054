import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** Small HTTP helpers shared by the simulator's origins: answers as values, JSON as PHP writes it, HTML pages. */

/** An answer computed before it is written, so faults can replace or cut it. */
export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string | Buffer;
  /** Streamed in pieces without a Content-Length (chunked transfer encoding). @default false */
  chunked?: boolean;
}

const JSON_TYPE = 'application/json';
const HTML_TYPE = 'text/html; charset=UTF-8';

/**
 * JSON as the service (a PHP application) encodes it: `json_encode` without flags escapes every non-ASCII character
 * as `\uXXXX` (UTF-16 units, so emoji become surrogate pairs) and `/` as `\/`. Same values after parsing; different
 * bytes, which catches clients that handle the body as text.
 */
export function phpJson(value: unknown): string {
  return JSON.stringify(value).replace(/[/\u0080-\uffff]/g, (c) =>
    c === '/' ? '\\/' : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

export function jsonAnswer(status: number, value: unknown): Answer {
  return { status, headers: { 'content-type': JSON_TYPE }, body: phpJson(value) };
}

/** A JSON answer whose body is already encoded (the cached list bodies). */
export function encodedJsonAnswer(status: number, body: string): Answer {
  return { status, headers: { 'content-type': JSON_TYPE }, body };
}

export function htmlAnswer(status: number, html: string): Answer {
  return { status, headers: { 'content-type': HTML_TYPE }, body: html };
}

/** What a browser lands on after the service redirects an unauthenticated, non-JSON request. */
export function loginPage(): string {
  return page(
    'Log in',
    '<form method="POST" action="/login">\n' +
      '<label>E-mail <input type="email" name="email" required></label>\n' +
      '<label>Password <input type="password" name="password" required></label>\n' +
      '<button type="submit">Log in</button>\n</form>',
  );
}

export function errorPage(status: number, message: string): string {
  return page(`${status}`, `<h1>${status}</h1>\n<p>${escapeHtml(message)}</p>`);
}

function page(title: string, body: string): string {
  const head = `<head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>`;
  return `<!DOCTYPE html>\n<html lang="en">\n${head}\n<body>\n${body}\n</body>\n</html>\n`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}

/**
 * Whether the client asked for JSON errors, by Laravel's rule (`Request::expectsJson`): the most preferred type of
 * `Accept` is a JSON one, or the request is an XMLHttpRequest that accepts anything.
 */
export function wantsJson(req: IncomingMessage): boolean {
  const ranges = (req.headers.accept ?? '')
    .split(',')
    .map((part, index) => {
      const [type = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase());
      const q = params.find((p) => p.startsWith('q='));
      return { type, q: q ? Number(q.slice(2)) : 1, index };
    })
    .filter((r) => r.type !== '')
    .sort((a, b) => b.q - a.q || a.index - b.index);
  const first = ranges[0]?.type ?? '';
  if (first.includes('/json') || first.includes('+json')) return true;
  const ajax = req.headers['x-requested-with'] === 'XMLHttpRequest';
  return ajax && (ranges.length === 0 || first === '*/*' || first === '*');
}

export class BodyTooLargeError extends Error {
  override name = 'BodyTooLargeError';
}

/** The whole request body, refusing more than `maxBytes`. */
export async function readBody(req: IncomingMessage, maxBytes = 1024 * 1024): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw new BodyTooLargeError(`request body over ${maxBytes} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

export function send(res: ServerResponse, answer: Answer): void {
  const body = typeof answer.body === 'string' ? Buffer.from(answer.body) : answer.body;
  if (answer.chunked) {
    res.writeHead(answer.status, answer.headers);
    // A client that stops reading closes the connection: the pipeline then ends quietly.
    pipeline(Readable.from(pieces(body, 64 * 1024)), res).catch(() => undefined);
    return;
  }
  res.writeHead(answer.status, { ...answer.headers, 'content-length': String(body.length) });
  res.end(body);
}

function* pieces(body: Buffer, size: number): Generator<Buffer> {
  for (let i = 0; i < body.length; i += size) yield body.subarray(i, i + size);
}
