import { DomainError, type ErrorDetail } from '@firm/core';
import { closeRuleSettings, type Executor } from '@firm/db';
import { sql } from 'drizzle-orm';
import { CLOSE_RULES, type CloseRule, closeRuleOf, type Severity } from './checklist';
import { firmRuleSettings, type RuleSetting } from './settings';

/** A rule of the catalogue as a firm has it: enabled or not, each threshold with its value and default. */
export interface FirmCloseRule {
  kind: string;
  severity: Severity;
  title: string;
  description: string;
  enabled: boolean;
  thresholds: { name: string; value: number; default: number; min: number; description: string }[];
}

function asFirmRule(rule: CloseRule, setting: RuleSetting | undefined): FirmCloseRule {
  return {
    kind: rule.kind,
    severity: rule.severity,
    title: rule.title,
    description: rule.description,
    enabled: rule.severity === 'blocking' || (setting?.enabled ?? rule.enabledByDefault ?? true),
    thresholds: Object.entries(rule.thresholds).map(([name, spec]) => ({
      name,
      value: setting?.thresholds[name] ?? spec.default,
      default: spec.default,
      min: spec.min,
      description: spec.description,
    })),
  };
}

/** The catalogue of checklist rules merged with the firm's settings, in the checklist's order. */
export async function listCloseRules(db: Executor, firmId: string): Promise<FirmCloseRule[]> {
  const settings = await firmRuleSettings(db, firmId);
  return CLOSE_RULES.map((rule) => asFirmRule(rule, settings.get(rule.kind)));
}

export interface CloseRuleChange {
  enabled?: boolean;
  /** Thresholds to set; a null sets one back to its default. */
  thresholds?: Record<string, number | null>;
}

/**
 * Changes the firm's setting of one rule: turns an advisory rule off or on, tunes its thresholds (whole numbers at
 * least the threshold's minimum). A blocking rule cannot be turned off; an unknown threshold is refused. Nothing is
 * written when anything is refused.
 */
export async function setCloseRule(
  db: Executor,
  firmId: string,
  kind: string,
  change: CloseRuleChange,
): Promise<FirmCloseRule> {
  const rule = closeRuleOf(kind);
  if (!rule) throw new DomainError('NOT_FOUND', `There is no checklist rule ${kind}`);
  const problems: ErrorDetail[] = [];
  if (change.enabled === false && rule.severity === 'blocking') {
    problems.push({ field: 'enabled', message: `${kind} is a blocking rule and cannot be turned off` });
  }
  for (const [name, value] of Object.entries(change.thresholds ?? {})) {
    const spec = rule.thresholds[name];
    if (!spec) problems.push({ field: `thresholds.${name}`, message: `${kind} has no threshold ${name}` });
    else if (value !== null && (!Number.isSafeInteger(value) || value < spec.min)) {
      problems.push({ field: `thresholds.${name}`, message: `${name} must be a whole number of at least ${spec.min}` });
    }
  }
  if (problems.length > 0) throw new DomainError('VALIDATION_ERROR', 'The rule setting is invalid', problems);

  const current = (await firmRuleSettings(db, firmId)).get(kind);
  const thresholds = { ...(current?.thresholds ?? {}) };
  for (const [name, value] of Object.entries(change.thresholds ?? {})) {
    if (value === null) delete thresholds[name];
    else thresholds[name] = value;
  }
  const enabled = change.enabled ?? current?.enabled ?? rule.enabledByDefault ?? true;
  await db
    .insert(closeRuleSettings)
    .values({ firmId, kind, enabled, thresholds })
    .onConflictDoUpdate({
      target: [closeRuleSettings.firmId, closeRuleSettings.kind],
      set: { enabled, thresholds, updatedAt: sql`now()` },
    });
  return asFirmRule(rule, { enabled, thresholds });
}
