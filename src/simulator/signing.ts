import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { AttachmentRecord } from './types.ts';

/** Attachment links stop working this long after the detail response that carried them (spec, Limits). */
export const ATTACHMENT_URL_TTL_MS = 10 * 60 * 1000;

/**
 * The HMAC key of a simulator with this seed. Derived rather than random so that a seed and a clock reproduce responses
 * byte for byte; it guards nothing but the fake's own expiry rule.
 */
export function signingSecret(seed: number): string {
  return createHash('sha256').update(`ticket-mirror-simulator:${seed}`).digest('hex');
}

export type SignatureCheck = 'valid' | 'expired' | 'invalid';

/**
 * Signed, expiring attachment links on the storage origin, in the style of S3/Laravel temporary URLs:
 * `${storageUrl}/files/{id}/{name}?expires=<unix seconds>&signature=<hex HMAC-SHA256 of "{id}:{expires}">`.
 */
export class AttachmentSigner {
  readonly storageUrl: string;
  readonly #secret: string;

  constructor(secret: string, storageUrl: string) {
    this.#secret = secret;
    this.storageUrl = storageUrl.replace(/\/+$/, '');
  }

  /** The link for an attachment in a response generated at `issuedAtMs`. */
  url(attachment: AttachmentRecord, issuedAtMs: number): string {
    // Rounding down keeps the link valid for at most (never more than) ten minutes after issue.
    const expires = Math.floor((issuedAtMs + ATTACHMENT_URL_TTL_MS) / 1000);
    const path = `/files/${attachment.id}/${encodeURIComponent(attachment.name)}`;
    return `${this.storageUrl}${path}?expires=${expires}&signature=${this.#sign(attachment.id, expires)}`;
  }

  /** Whether a link's `expires` and `signature` query values are genuine and still valid at `nowMs`. */
  check(id: string, expires: string | null, signature: string | null, nowMs: number): SignatureCheck {
    if (expires === null || signature === null || !/^\d+$/.test(expires)) return 'invalid';
    const expected = Buffer.from(this.#sign(id, Number(expires)));
    const given = Buffer.from(signature);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'invalid';
    return nowMs < Number(expires) * 1000 ? 'valid' : 'expired';
  }

  #sign(id: string, expires: number): string {
    return createHmac('sha256', this.#secret).update(`${id}:${expires}`).digest('hex');
  }
}
