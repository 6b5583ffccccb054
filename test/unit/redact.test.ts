import { describe, expect, it } from 'vitest';
import { LINK_REMOVED, stripAttachmentUrls, withoutSignedLinks } from '../../src/sync/redact.ts';

const HOST = 'files.example:8443';
const URL1 = `https://${HOST}/files/a1/x%20(1).pdf?expires=1767600000&signature=0f1e2d3c`;
const html = (s: string) => s.replace(/&/g, '&amp;');

function body(text: string, attachment: Record<string, unknown> = {}) {
  const a = { id: 'a1', name: 'x (1).pdf', mime_type: 'pdf', size: 10, url: URL1, ...attachment };
  return {
    id: 't1',
    future_field: { note: text },
    attachments: [a],
    messages: [{ id: 'm1', message: text, attachments: [a] }],
  };
}

/** Everything a redacted body says, as text. */
const dump = (b: unknown) => JSON.stringify(b);

describe('stripAttachmentUrls', () => {
  it('leaves payloads without attachments alone', () => {
    expect(stripAttachmentUrls({ a: 1, b: ['x'], url: 'kept: not an attachment' })).toEqual({ a: 1, b: ['x'], url: 'kept: not an attachment' });
  });

  it('keeps attachments to id, name, mime_type and size', () => {
    const out = stripAttachmentUrls(
      body('hi', { thumbnail_url: `https://${HOST}/thumbs/a1.png?signature=aa`, download: { href: `https://${HOST}/d/a1` }, checksum: 'c0ffee' }),
    ) as ReturnType<typeof body>;
    const kept = { id: 'a1', name: 'x (1).pdf', mime_type: 'pdf', size: 10 };
    expect(out.attachments).toEqual([kept]);
    expect(out.messages[0]!.attachments).toEqual([kept]);
    expect(out.future_field).toEqual({ note: 'hi' });
  });

  it.each([
    ['the exact link', `see ${URL1} thanks`],
    ['in angle brackets', `see <${URL1}> thanks`],
    ['percent-encoded', `see https://redirect.example/?to=${encodeURIComponent(URL1)} thanks`],
    ['percent-encoded alone', `see ${encodeURIComponent(URL1)} thanks`],
    ['percent-encoded twice', `see ${encodeURIComponent(encodeURIComponent(URL1))} thanks`],
    ['percent-encoded, lower-case hex', `see ${encodeURIComponent(URL1).replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase())} thanks`],
    ['&amp;-escaped', `see <a href="${html(URL1)}">x</a> thanks`],
    ['&amp;-escaped, then escaped again', `see &lt;a href=&quot;${html(html(URL1))}&quot;&gt; thanks`],
    ['numeric entities', `see ${URL1.replace(/\//g, '&#47;').replace(/:/, '&#x3A;').replace(/&(?!#)/g, '&#38;')} thanks`],
    ['JSON-escaped', `see {"url":"${URL1.replace(/\//g, '\\/')}"} thanks`],
    ['JSON \\u-escaped', `see ${URL1.replace(/\//g, '\\u002f')} thanks`],
    ['in a markdown link', `see [the file](${URL1}) thanks`],
    ['another file on the storage host, signed', `see https://${HOST}/files/zz/other.png?expires=1&signature=ff thanks`],
    ['another file on the storage host, unsigned', `see https://${HOST}/files/zz/other.png thanks`],
    ['the storage host in upper case', `see HTTPS://${HOST.toUpperCase()}/files/zz/other.png thanks`],
    ['a scheme-relative link', `see //${HOST}/files/a1/x.pdf thanks`],
    ['a signed link on any host', `see https://cdn.example/f/1?X-Amz-Signature=abc&X-Amz-Expires=600 thanks`],
    ['a signed path without host', `see /files/a1/x.pdf?expires=1&signature=0f1e thanks`],
    // The same server, written otherwise: another port (the default one spelled out), a trailing dot, backslashes.
    ['the storage host with another port', `see https://files.example:443/files/zz/other.png thanks`],
    ['the storage host without its port', `see https://files.example/files/zz/other.png thanks`],
    ['the storage host with a trailing dot', `see https://files.example.:8443/files/zz/other.png thanks`],
    ['the storage host behind backslashes', `see https:\\\\files.example:8443\\files\\zz\\other.png thanks`],
  ])('cuts out %s, in message text and every other string', (_, text) => {
    const out = stripAttachmentUrls(body(text)) as ReturnType<typeof body>;
    for (const s of [out.messages[0]!.message, out.future_field.note]) {
      expect(s).toContain(LINK_REMOVED);
      expect(s.startsWith('see ')).toBe(true);
      expect(s.endsWith(' thanks')).toBe(true);
    }
    const text2 = dump(out).toLowerCase();
    expect(text2).not.toMatch(/signature|sig=|expires=/);
    expect(text2).not.toContain('files.example');
    expect(text2).not.toMatch(/0f1e/);
  });

  it('cuts links out of object keys too', () => {
    const out = stripAttachmentUrls({ ...body('hi'), extra: { [URL1]: true } });
    expect(dump(out)).not.toMatch(/signature|files\.example/);
  });

  it('a link found only in an extra attachment field names a storage host too', () => {
    const out = stripAttachmentUrls(body(`thumb at https://thumbs.example/t/a1.png, site https://www.example.com/help`, {
      url: undefined,
      thumbnail_url: 'https://thumbs.example/t/a1.png',
    }));
    expect(dump(out)).not.toContain('thumbs.example');
    // Other links are the customer's text, and stay.
    expect(dump(out)).toContain('https://www.example.com/help');
  });

  it('cuts a link wrapped across two lines (plain-text e-mail) wherever it breaks, and a copy of it in any encoding, whole', () => {
    const signature = 'c0ffee0123456789abcdef0123456789';
    const link = `https://${HOST}/files/a1/x.pdf?expires=1767600000&signature=${signature}`;
    const a = { url: link };
    for (let at = 1; at < link.length; at++) {
      const text = `see ${link.slice(0, at)}\n${link.slice(at)} thanks`;
      const out = stripAttachmentUrls(body(text, a)) as ReturnType<typeof body>;
      const stored = out.messages[0]!.message;
      expect(stored, `broken at ${at}`).toMatch(/^see .*thanks$/s);
      // No part of the signature of 8 characters or more is left.
      for (let i = 0; i + 8 <= signature.length; i++) expect(stored, `broken at ${at}`).not.toContain(signature.slice(i, i + 8));
    }
    for (const copy of [html(link), link.replaceAll('/', '\\/'), encodeURIComponent(link)]) {
      const out = stripAttachmentUrls(body(`<a href="${copy}">report</a> ok`, a)) as ReturnType<typeof body>;
      expect(out.messages[0]!.message).toBe(`<a href="${LINK_REMOVED}">report</a> ok`);
    }
  });

  it('keeps text without links exactly, and links elsewhere that carry no signature', () => {
    const text = 'Hello — 50% off & more; see https://docs.example/a?b=c&d=e or http://127.0.0.1:9/x, path a/b, C:\\dir, https://files.example.com/x';
    const out = stripAttachmentUrls(body(text)) as ReturnType<typeof body>;
    expect(out.messages[0]!.message).toBe(text);
  });
});

describe('stripAttachmentUrls and odd keys', () => {
  it('keeps a key named __proto__ as a key', () => {
    const parsed = JSON.parse('{"id":"t1","__proto__":{"x":1},"attachments":[]}') as Record<string, unknown>;
    const out = stripAttachmentUrls(parsed);
    expect(Object.keys(out)).toEqual(['id', '__proto__', 'attachments']);
    expect(JSON.stringify(out)).toBe('{"id":"t1","__proto__":{"x":1},"attachments":[]}');
  });
});

describe('withoutSignedLinks (a list item\'s text)', () => {
  it('cuts out a signed link, and keeps the rest as it is', () => {
    expect(withoutSignedLinks('Ann see https://cdn.example/f/report.pdf?X-Amz-Signature=SIGSECRET1&X-Amz-Expires=600 ok')).toBe(`Ann see ${LINK_REMOVED} ok`);
    expect(withoutSignedLinks('Ann <ann@example.com> https://docs.example/a?b=c')).toBe('Ann <ann@example.com> https://docs.example/a?b=c');
    // Words that merely look like a query are text: nothing names a link there.
    for (const text of ['Please update the signature=on setting', 'e-signature=required for contract', 'my sig=abc ok']) {
      expect(withoutSignedLinks(text)).toBe(text);
    }
  });
});
