import { isObject, type JsonObject } from '../api/client.ts';

/**
 * Attachment links are signed secrets (spec: "absolute, signed link to the file, hosted at {storage_url}"): nothing of
 * one may be stored or logged. A detail is redacted here, before anything else looks at it:
 *
 * 1. Each attachment (an element of any `attachments` array) keeps the spec's fields minus its link: `id`, `name`,
 *    `mime_type`, `size`. Anything else — `url`, a `thumbnail_url`, a download link a new API version adds — goes.
 * 2. The *storage hosts* are the hosts (with port) of every URL found anywhere inside an attachment.
 * 3. In every string of the payload (message text, names, unknown fields, object keys), a link is cut out and replaced
 *    by `[attachment link removed]` when it is a copy of an attachment's URL, points at a storage host, or carries a
 *    signature in its query — whatever its encoding: as is, percent-encoded (even twice), HTML-escaped (`&amp;`,
 *    `&#47;` …), JSON-escaped (`\/`, `\u002f`).
 *
 * A link is the run of characters that cannot end a URL in text (no space, quote or angle bracket), from its scheme
 * (or its `//`) on; whatever sticks to its end (a closing parenthesis) goes with it: better a character too many than a
 * signature left.
 */

export const LINK_REMOVED = '[attachment link removed]';

/** The fields an attachment keeps: the spec's minus `url`. */
const ATTACHMENT_FIELDS: ReadonlySet<string> = new Set(['id', 'name', 'mime_type', 'size']);

/** A deep copy of a detail body, redacted as above. */
export function stripAttachmentUrls(body: JsonObject): JsonObject {
  const found = { urls: new Set<string>(), hosts: new Set<string>() };
  collect(body, found, false);
  const signatures = [...new Set([...found.urls].flatMap(signaturesOf))].filter((v) => v.length >= MIN_SIGNATURE_PART);
  const redactor: Redactor = { urls: [...found.urls].filter((u) => u.length > 8), hosts: [...found.hosts], signatures };
  return strip(body, redactor, false) as JsonObject;
}

/**
 * `text` without a link that carries a signature in its query (see SIGNED): for text that comes without the
 * attachments that would name their URLs and hosts — a list item's name, e-mail or status. A list poll wrote back,
 * at every poll, the signed link its ticket's detail had removed.
 */
export function withoutSignedLinks(text: string): string {
  return redactText(text, NO_ATTACHMENTS);
}

const NO_ATTACHMENTS: Redactor = { urls: [], hosts: [], signatures: [] };

/** The shortest part of a signature cut on its own: shorter ones are too likely to be ordinary words. */
const MIN_SIGNATURE_PART = 8;

/** The values of a URL's signature parameters (see SIGNED), as written and decoded. */
function signaturesOf(url: string): string[] {
  const out: string[] = [];
  for (const m of url.matchAll(/[?&;](?:[\w.-]*signature|sig)=([^&#\s]+)/gi)) out.push(m[1]!, decode(m[1]!));
  return out;
}

interface Redactor {
  /** Attachment URLs as given: cut out wherever they are copied as they are. */
  urls: string[];
  /** Storage hosts, lower case, without a port or a trailing dot (see hostOf). */
  hosts: string[];
  /**
   * The attachments' signature values: a link wrapped across two lines (as plain-text e-mail does) leaves its second
   * half, no link by itself, on the next line — the query with the signature, or the signature's end.
   */
  signatures: string[];
}

/** Every string inside an attachment is a URL until proven otherwise: its host is a storage host. */
function collect(value: unknown, found: { urls: Set<string>; hosts: Set<string> }, inAttachment: boolean): void {
  if (typeof value === 'string') {
    if (!inAttachment) return;
    const host = hostOf(decode(value));
    if (host !== null) {
      found.hosts.add(host);
      found.urls.add(value);
    }
  } else if (Array.isArray(value)) {
    for (const v of value) collect(v, found, inAttachment);
  } else if (isObject(value)) {
    for (const [k, v] of Object.entries(value)) {
      // Elements of an `attachments` array are attachments, and so is everything inside them.
      if (k === 'attachments' && Array.isArray(v)) for (const a of v) collect(a, found, true);
      else collect(v, found, inAttachment);
    }
  }
}

function strip(value: unknown, r: Redactor, isAttachment: boolean): unknown {
  if (typeof value === 'string') return redactText(value, r);
  if (Array.isArray(value)) return value.map((v) => strip(v, r, false));
  if (isObject(value)) {
    const out: Array<[string, unknown]> = [];
    for (const [k, v] of Object.entries(value)) {
      if (isAttachment && !ATTACHMENT_FIELDS.has(k)) continue;
      const stripped = k === 'attachments' && Array.isArray(v) ? v.map((a) => strip(a, r, true)) : strip(v, r, false);
      out.push([redactText(k, r), stripped]);
    }
    // fromEntries, not assignment: a key named __proto__ stays a key.
    return Object.fromEntries(out);
  }
  return value;
}

// A run of characters a link in text may hold; it ends at white space, a quote or an angle bracket, escaped or not.
const TOKEN = /(?:(?!&(?:quot|lt|gt|apos|#0*3[49]|#x0*2[27]);)[^\s"'<>`])+/gi;
// Only a token holding one of these can hold a link in any of the encodings above.
const MAYBE_LINK = /[/%\\]|&#|&sol/i;
// Where a link starts in a token: its scheme, or its `//`, in any encoding.
const SLASH = String.raw`(?:\/|\\\/|\\u002f|%(?:25)*2f|&#0*47;?|&#x0*2f;?|&sol;)`;
const LINK_START = new RegExp(String.raw`https?(?::|%(?:25)*3a|&#0*58;?|&#x0*3a;?|&colon;|\\u003a)${SLASH}${SLASH}|${SLASH}${SLASH}`, 'i');
// A signature in a query: `signature=`, `X-Amz-Signature=`, `X-Goog-Signature=`, Azure's `sig=`.
const SIGNED = /[?&;#](?:[\w.-]*signature|sig)=/i;

/** `text` with every attachment link cut out (see the header), and what is left of a wrapped one. */
function redactText(text: string, r: Redactor): string {
  let out = text;
  for (const u of r.urls) if (out.includes(u)) out = out.replaceAll(u, LINK_REMOVED);
  if (MAYBE_LINK.test(out)) {
    out = out.replace(TOKEN, (token) => {
      if (!MAYBE_LINK.test(token)) return token;
      const decoded = decode(token).toLowerCase();
      if (!SIGNED.test(decoded) && !r.hosts.some((host) => namesHost(decoded, host))) return token;
      const start = LINK_START.exec(token)?.index ?? 0;
      return token.slice(0, start) + LINK_REMOVED;
    });
  }
  // Any part of a signature this long holds its first or its last MIN_SIGNATURE_PART characters: text that holds
  // neither is left alone without a look at each of its words (five times the time, for a detail of 200 long messages).
  const edges = r.signatures.filter((sig) => out.includes(sig.slice(0, MIN_SIGNATURE_PART)) || out.includes(sig.slice(-MIN_SIGNATURE_PART)));
  return edges.length === 0 ? out : out.replace(TOKEN, (token) => (holdsSignaturePart(token, edges) ? LINK_REMOVED : token));
}

/**
 * Whether a run of text holds a signature, or the start or the end of one (at least MIN_SIGNATURE_PART characters):
 * the second line of a link wrapped inside its signature starts with the signature's end.
 */
function holdsSignaturePart(token: string, signatures: readonly string[]): boolean {
  if (token.length < MIN_SIGNATURE_PART || token === LINK_REMOVED) return false;
  for (const sig of signatures) {
    if (token.includes(sig)) return true;
    for (let n = Math.min(sig.length - 1, token.length); n >= MIN_SIGNATURE_PART; n--) {
      if (token.startsWith(sig.slice(sig.length - n)) || token.endsWith(sig.slice(0, n))) return true;
    }
  }
  return false;
}

/**
 * Whether decoded text holds a link to `host`: `//host` or `@host` followed by a path, a query or nothing; `host/…` at
 * its start. The host may be written with a trailing dot (`files.example.`) and any port (`files.example:443`), and
 * backslashes count as slashes (browsers read `https:\\files.example\\…` as a link): each names the same server.
 */
function namesHost(decodedText: string, host: string): boolean {
  const decoded = decodedText.includes('\\') ? decodedText.replaceAll('\\', '/') : decodedText;
  for (let i = decoded.indexOf(host); i !== -1; i = decoded.indexOf(host, i + 1)) {
    const before = i === 0 ? '' : decoded[i - 1]!;
    const rest = HOST_END.exec(decoded.slice(i + host.length, i + host.length + 8));
    if (!rest) continue;
    const after = rest[1]!;
    if ((before === '/' || before === '@') && (after === '' || '/?#'.includes(after))) return true;
    if (before === '' && after !== '' && '/?#'.includes(after)) return true;
  }
  return false;
}

// What may follow a host before its path: a trailing dot, a port; then the path's first character, or the end.
const HOST_END = /^\.?(?::\d{0,5})?([/?#]|$)/;

/** The host (lower case, without its port or a trailing dot) of an absolute or scheme-relative URL; null for anything else. */
function hostOf(url: string): string | null {
  const m = /^\s*(?:https?:)?[/\\]{2}(?:[^/\\?#\s@]*@)?([^/\\?#\s:]+)/i.exec(url);
  return m ? m[1]!.toLowerCase().replace(/\.$/, '') : null;
}

const ENTITIES: Record<string, string> = { amp: '&', colon: ':', sol: '/', quest: '?', equals: '=', period: '.', num: '#', percnt: '%' };

/** Undoes the encodings a link may wear, each as many times as it was applied (up to four). */
function decode(text: string): string {
  let out = text;
  for (let round = 0; round < 4; round++) {
    const next = out
      .replace(/\\u([0-9a-f]{4})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
      .replace(/\\\//g, '/')
      .replace(/&(?:#(\d{1,7})|#x([0-9a-f]{1,6})|([a-z]+));?/gi, (whole, dec?: string, hex?: string, name?: string) => {
        if (name !== undefined) return ENTITIES[name.toLowerCase()] ?? whole;
        const code = dec !== undefined ? Number(dec) : parseInt(hex!, 16);
        return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
      })
      .replace(/%([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    if (next === out) break;
    out = next;
  }
  return out;
}
