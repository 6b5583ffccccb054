/** One request of the ledger (`api_requests`) as the budget (sync/budget.ts) reads it; db/repos/ledger.ts loads them. */
export interface LedgerSample {
  at: number;
  /** HTTP status, when a response arrived: a 429 says nothing of other clients (its Retry-After is obeyed instead). */
  status?: number | null;
  /** Server's x-ratelimit-remaining after this request, when known. */
  remaining: number | null;
  /** Server's x-ratelimit-limit, when known. */
  limit: number | null;
  /** What the request was for, when known (the ledger's `kind`): replies are held to their share (sync/gate.ts). */
  kind?: string | null;
}
