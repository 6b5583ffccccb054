/** Exit codes of the CLI: 0 ok; 2 configuration or authentication problems; 1 anything else. */
export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

/** A command's own decision about its exit code, with a one-line message. */
export class ExitError extends Error {
  override name = 'ExitError';
  constructor(
    message: string,
    readonly code: number,
    /** `cause`: the failure behind the decision, which the report explains when it can (see explainFailure). */
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
