import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock } from '../clock.ts';
import { send, type Answer } from './http.ts';
import type { SimulatorModel } from './model.ts';
import { hashSeed, Random } from './random.ts';
import type { AttachmentRecord } from './types.ts';

/**
 * The storage origin: serves `GET /files/{id}/{name}?expires=…&signature=…` while the link is genuine and unexpired
 * (by the injected clock), 403 otherwise, like an object store's presigned URLs. No bearer token, no quota.
 * Accounts other than a single-account simulator's own have their files under `/a/{ordinal}/files/…`.
 */

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  pdf: 'application/pdf',
  png: 'image/png',
  jpg: 'image/jpeg',
  txt: 'text/plain; charset=UTF-8',
  csv: 'text/csv; charset=UTF-8',
};

/** The first bytes of real files of each type, so a downloaded file is recognised as what it claims to be. */
const MAGIC: Readonly<Record<string, string>> = {
  pdf: '%PDF-1.4\n',
  png: '\x89PNG\r\n\x1a\n',
  jpg: '\xff\xd8\xff\xe0',
};

const FILES = /^(?:\/a\/([1-9]\d{0,8}))?\/files\/([^/]+)\/([^/]+)$/;

/** The model whose files are under `/a/{ordinal}/` (null: at the root), if it exists and has been built. */
export type StorageLookup = (ordinal: number | null) => SimulatorModel | undefined;

export function createStorageHandler(lookup: StorageLookup, clock: Clock): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => send(res, storageAnswer(lookup, clock.now(), req));
}

function storageAnswer(lookup: StorageLookup, now: number, req: IncomingMessage): Answer {
  // `demo` serves this in the daemon's own process: a target `new URL` refuses (`//`) must not throw out of the handler.
  if (!URL.canParse(req.url ?? '/', 'http://storage.invalid')) return denied(400, 'InvalidURI', "Couldn't parse the specified URI.");
  const url = new URL(req.url ?? '/', 'http://storage.invalid');
  const match = FILES.exec(url.pathname);
  const model = match && lookup(match[1] === undefined ? null : Number(match[1]));
  if (!match || !model || (req.method !== 'GET' && req.method !== 'HEAD')) return denied(404, 'NoSuchKey', 'Not Found');
  let id: string;
  let name: string;
  try {
    id = decodeURIComponent(match[2]!);
    name = decodeURIComponent(match[3]!);
  } catch {
    return denied(404, 'NoSuchKey', 'Not Found');
  }
  const check = model.signer.check(id, url.searchParams.get('expires'), url.searchParams.get('signature'), now);
  if (check === 'expired') return denied(403, 'AccessDenied', 'Request has expired');
  if (check === 'invalid') return denied(403, 'AccessDenied', 'Signature does not match');
  const file = model.attachment(id);
  if (!file || file.name !== name) return denied(404, 'NoSuchKey', 'Not Found');
  return {
    status: 200,
    headers: {
      'content-type': CONTENT_TYPES[file.mimeType] ?? 'application/octet-stream',
      'content-disposition': `inline; filename*=UTF-8''${encodeURIComponent(file.name)}`,
    },
    body: fileBytes(file),
  };
}

/** An object store's error document. */
function denied(status: number, code: string, message: string): Answer {
  const xml = `<Error><Code>${code}</Code><Message>${message}</Message></Error>`;
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n${xml}\n`;
  return { status, headers: { 'content-type': 'application/xml' }, body };
}

/**
 * A file's content: exactly `size` bytes, the same on every download (seeded by the attachment id), starting with the
 * type's magic bytes; text types get printable lines.
 */
function fileBytes(file: Pick<AttachmentRecord, 'id' | 'mimeType' | 'size'>): Buffer {
  const bytes = Buffer.alloc(file.size);
  const magic = Buffer.from(MAGIC[file.mimeType] ?? '', 'latin1');
  magic.copy(bytes, 0, 0, Math.min(magic.length, file.size));
  const rng = new Random(hashSeed(file.id));
  const text = file.mimeType === 'txt' || file.mimeType === 'csv';
  for (let i = magic.length; i < file.size; i++) {
    if (!text) bytes[i] = rng.uint32() & 0xff;
    else bytes[i] = i % 72 === 71 ? 0x0a : 0x20 + (rng.uint32() % 95);
  }
  return bytes;
}
