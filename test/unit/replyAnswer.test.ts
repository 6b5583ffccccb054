import { describe, expect, it } from 'vitest';
import { classifyReplyAnswer, sentNothing, type ReplyVerdictKind } from '../../src/api/replyAnswer.ts';

const JSON_TYPE = { 'content-type': 'application/json' };
const HTML_TYPE = { 'content-type': 'text/html; charset=UTF-8' };
const created = JSON.stringify({ id: 'm1', created_at: '2026-01-05T09:00:00.000000Z' });
const loginPage = '<!DOCTYPE html><html><body><form action="/login">Sign in</form></body></html>';
const apiError = (error: string) => JSON.stringify({ error });

/** [what, status, headers, body, verdict]: every class of answer the POST rule names. */
const ANSWERS: Array<[string, number, Record<string, string>, string, ReplyVerdictKind]> = [
  // The new message's id: created.
  ['201 with {id, created_at}', 201, JSON_TYPE, created, 'created'],
  ['200 with {id, created_at}', 200, JSON_TYPE, created, 'created'],
  ['201 with a byte-order mark before the JSON', 201, JSON_TYPE, `\uFEFF${created}`, 'created'],
  // Proofs that nothing was created: the API's own error body.
  ['401 with the API\'s {"error"}', 401, JSON_TYPE, apiError('Unauthenticated.'), 'refused'],
  ['403 with the API\'s {"error"}', 403, JSON_TYPE, apiError('Forbidden.'), 'refused'],
  ['422 with the API\'s {"error"}', 422, JSON_TYPE, apiError('The message must be at least 3 characters.'), 'refused'],
  ['400 with the API\'s {"error"} (the spec\'s first faulty-request status)', 400, JSON_TYPE, apiError('The message field is required.'), 'refused'],
  ['413 with the API\'s {"error"}', 413, JSON_TYPE, apiError('Payload too large.'), 'refused'],
  ['415 with the API\'s {"error"}', 415, JSON_TYPE, apiError('Unsupported media type.'), 'refused'],
  ['404 with the API\'s {"error"}', 404, JSON_TYPE, apiError('Ticket not found.'), 'not_found'],
  // HTML, whatever the status.
  ['201 with an HTML page', 201, HTML_TYPE, loginPage, 'unknown'],
  ['200 with an HTML page', 200, HTML_TYPE, loginPage, 'unknown'],
  ['200 with an HTML body but a JSON content type', 200, JSON_TYPE, loginPage, 'unknown'],
  ['401 with an HTML page', 401, HTML_TYPE, loginPage, 'unknown'],
  ['403 with an HTML page', 403, HTML_TYPE, loginPage, 'unknown'],
  ['404 with an HTML page', 404, HTML_TYPE, '<html><body>Not Found</body></html>', 'unknown'],
  ['500 with an HTML page', 500, HTML_TYPE, loginPage, 'unknown'],
  // 2xx that does not carry the new message.
  ['200 text/plain', 200, { 'content-type': 'text/plain' }, 'OK', 'unknown'],
  ['201 with an empty body', 201, {}, '', 'unknown'],
  ['201 with truncated JSON', 201, JSON_TYPE, created.slice(0, Math.floor(created.length / 2)), 'unknown'],
  ['201 with {}', 201, JSON_TYPE, '{}', 'unknown'],
  ['201 with an empty id', 201, JSON_TYPE, JSON.stringify({ id: '', created_at: '2026-01-05T09:00:00.000000Z' }), 'unknown'],
  ['201 with a numeric id', 201, JSON_TYPE, JSON.stringify({ id: 7, created_at: '2026-01-05T09:00:00.000000Z' }), 'unknown'],
  ['201 without created_at', 201, JSON_TYPE, JSON.stringify({ id: 'm1' }), 'unknown'],
  ['201 with a created_at that is no time', 201, JSON_TYPE, JSON.stringify({ id: 'm1', created_at: 'yesterday' }), 'unknown'],
  ['201 with an array', 201, JSON_TYPE, `[${created}]`, 'unknown'],
  ['201 with null', 201, JSON_TYPE, 'null', 'unknown'],
  ['204 with no body', 204, {}, '', 'unknown'],
  // Errors that are not the API's own.
  ['404 with a gateway\'s {"message"}', 404, JSON_TYPE, JSON.stringify({ message: 'Not Found' }), 'unknown'],
  ['404 with an empty body', 404, {}, '', 'unknown'],
  ['401 without a body', 401, {}, '', 'unknown'],
  ['422 with another JSON shape', 422, JSON_TYPE, JSON.stringify({ message: 'invalid', errors: {} }), 'unknown'],
  ['400 without a body', 400, {}, '', 'unknown'],
  ['413 from a proxy, as a page', 413, HTML_TYPE, '<html><body>413 Request Entity Too Large</body></html>', 'unknown'],
  ['409 with the API\'s {"error"}', 409, JSON_TYPE, apiError('Conflict'), 'unknown'],
  ['429 from the server, with the API\'s {"error"}', 429, { ...JSON_TYPE, 'retry-after': '30' }, apiError('Too Many Attempts.'), 'unknown'],
  ['429 with nothing', 429, {}, '', 'unknown'],
  // Redirects (never followed), server errors, the rest.
  ['302 to a login page', 302, { location: 'https://sso.example.com/login' }, '', 'unknown'],
  ['301 with a JSON body', 301, { ...JSON_TYPE, location: '/elsewhere' }, created, 'unknown'],
  ['500 with the API\'s {"error"}', 500, JSON_TYPE, apiError('Server Error'), 'unknown'],
  ['502 from a gateway', 502, { 'content-type': 'text/plain' }, 'Bad Gateway', 'unknown'],
  ['503 with {id, created_at}', 503, JSON_TYPE, created, 'unknown'],
  ['418', 418, JSON_TYPE, apiError("I'm a teapot"), 'unknown'],
];

describe('classifyReplyAnswer: what the answer to a reply POST proves', () => {
  it.each(ANSWERS)('%s → %s', (_, status, headers, body, kind) => {
    expect(classifyReplyAnswer(status, headers, body).kind).toBe(kind);
  });

  it('gives the new message, the refusal and its status, and says why an outcome is unknown', () => {
    expect(classifyReplyAnswer(201, JSON_TYPE, created)).toEqual({ kind: 'created', reply: { id: 'm1', created_at: '2026-01-05T09:00:00.000000Z' } });
    expect(classifyReplyAnswer(403, JSON_TYPE, apiError('Forbidden.'))).toEqual({ kind: 'refused', status: 403, error: 'Forbidden.' });
    expect(classifyReplyAnswer(404, JSON_TYPE, apiError('Ticket not found.'))).toEqual({ kind: 'not_found', error: 'Ticket not found.' });
    expect(classifyReplyAnswer(201, HTML_TYPE, loginPage)).toMatchObject({ kind: 'unknown', reason: 'HTTP 201 with an HTML page, not the API', throttled: false });
    expect(classifyReplyAnswer(429, {}, '')).toMatchObject({ kind: 'unknown', throttled: true });
    expect(classifyReplyAnswer(302, {}, '')).toMatchObject({ kind: 'unknown', reason: expect.stringMatching(/redirect/) });
  });
});

describe('sentNothing: a POST without an answer that provably never left', () => {
  it.each([
    ['ECONNREFUSED', true],
    ['ENOTFOUND', true],
    ['EAI_AGAIN', true],
    ['ETIMEDOUT', false],
    ['ECONNRESET', false],
    ['EPIPE', false],
    ['ERR_ABORTED', false],
    [undefined, false],
  ] as const)('%s → %s', (code, expected) => {
    expect(sentNothing(code)).toBe(expected);
  });
});
