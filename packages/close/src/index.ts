/** Month-end closes: the checklist computed from the books, sign-offs, finishing with stored evidence, reopening. */
export { CLOSE_RULES, computeChecklist, itemKey } from './checklist';
export type { ChecklistItem, ClosePeriod, CloseRule, EvidenceRef, Severity } from './checklist';
