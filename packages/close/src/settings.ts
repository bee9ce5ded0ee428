import { closeRuleSettings, type Executor } from '@firm/db';
import { eq } from 'drizzle-orm';

/** A firm's own setting of one rule; a rule without one runs with its defaults. */
export interface RuleSetting {
  enabled: boolean;
  thresholds: Record<string, number>;
}

/** A firm's rule settings by kind. */
export type FirmRuleSettings = Map<string, RuleSetting>;

/** The firm's settings of the checklist rules, by kind. */
export async function firmRuleSettings(db: Executor, firmId: string): Promise<FirmRuleSettings> {
  const rows = await db
    .select({
      kind: closeRuleSettings.kind,
      enabled: closeRuleSettings.enabled,
      thresholds: closeRuleSettings.thresholds,
    })
    .from(closeRuleSettings)
    .where(eq(closeRuleSettings.firmId, firmId));
  return new Map(rows.map((r) => [r.kind, { enabled: r.enabled, thresholds: r.thresholds }]));
}
