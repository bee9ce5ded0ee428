/** Month-end closes: the checklist computed from the books, sign-offs, finishing with stored evidence, reopening. */
export { BookReads, CLOSE_RULES, closeRuleOf, computeChecklist, itemKey } from './checklist';
export type { ChecklistItem, ClosePeriod, CloseRule, EvidenceRef, Severity, ThresholdSpec } from './checklist';
export { listCloseRules, setCloseRule } from './rules';
export type { CloseRuleChange, FirmCloseRule } from './rules';
export { firmRuleSettings } from './settings';
export type { FirmRuleSettings, RuleSetting } from './settings';
