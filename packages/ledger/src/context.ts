/**
 * Who is acting, for the audit trail, and the clock. The HTTP layer builds it from the request; tests
 * pass a fixed `now` so timestamps are predictable.
 */
export interface LedgerContext {
  firmId: string;
  actor: { kind: string; id: string };
  /** The request that caused the change; null outside HTTP (CLI, workers). */
  requestId?: string | null | undefined;
  now?: Date | undefined;
}

export const nowOf = (ctx: LedgerContext): Date => ctx.now ?? new Date();
