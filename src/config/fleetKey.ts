/**
 * FLEET_KEY's form, checked here so that loadConfig reports a bad key among every other problem and fleet/tokenSeal.ts
 * builds the key from the very same rule: exactly 32 bytes, as canonical base64 (44 characters) or hex (64). A
 * passphrase, another length, or base64 with stray characters is refused rather than stretched or cut: a key that
 * half-works would seal tokens that no other worker could open.
 */

export const FLEET_KEY_HINT =
  'FLEET_KEY must be 32 random bytes, as base64 (44 characters) or hex (64): make one with `openssl rand -base64 32`';

/** The key's 32 bytes, or null when `text` (trimmed) is not such a key. */
export function decodeFleetKey(text: string): Buffer | null {
  const value = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(value)) return Buffer.from(value, 'hex');
  if (!/^[A-Za-z0-9+/]{43}=$/.test(value)) return null;
  const decoded = Buffer.from(value, 'base64');
  // Canonical only: the last character's unused bits must be zero, or two spellings would give one key.
  return decoded.length === 32 && decoded.toString('base64') === value ? decoded : null;
}

/** The problem of a FLEET_KEY value, never showing it; null when it is a key. */
export function fleetKeyProblem(value: string): string | null {
  return decodeFleetKey(value) ? null : `FLEET_KEY (${value.trim().length} characters, not shown) is not a key: ${FLEET_KEY_HINT}`;
}
