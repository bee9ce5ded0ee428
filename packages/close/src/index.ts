/** Month-end closes: the checklist computed from the books, sign-offs, finishing with stored evidence, reopening. */
export { BookReads, CLOSE_RULES, closeRuleOf, computeChecklist, itemKey } from './checklist';
export type { ChecklistItem, ClosePeriod, CloseRule, EvidenceRef, Severity, ThresholdSpec } from './checklist';
export { listCloseRules, setCloseRule } from './rules';
export type { CloseRuleChange, FirmCloseRule } from './rules';
export { firmRuleSettings } from './settings';
export type { FirmRuleSettings, RuleSetting } from './settings';
export {
  addComment,
  checkPeriod,
  closeBoard,
  closeItems,
  closeOf,
  closesOfClients,
  listCloses,
  openClose,
  openCounts,
  readClose,
  signOffItem,
} from './closes';
export type { BoardRow, CloseComment, CloseItem, CloseRow, CloseView, OpenCounts, Signoff } from './closes';
export {
  CLOSE_EVIDENCE_HASHERS,
  EVIDENCE_FILES,
  evidenceFile,
  listEvidence,
  manifestSha256,
  storedEvidenceSha256,
} from './evidence';
export type { EvidenceFile } from './evidence';
export { auditClose, finishClose, reopenClose } from './finish';
