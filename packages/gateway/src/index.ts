export { appendAuditEvent, listAgentAuditEvents, openAuditTrail, verifyAuditChains } from './audit';
export type { EvidenceHasher, VerifyOptions } from './audit';
export type { AuditTrail, ChainReport } from './audit';
export { agentClientOf, getClient, listClients, setAgentAccess, setFirmAgentAccess } from './clients';
export type { Client } from './clients';
export { COVERAGE, coverageOf, coverageOfShortcut, SHORTCUT_LISTS, TRANSACTION_TYPES } from './coverage';
export type { CoverageEntry } from './coverage';
export { QUERY_LIMITS } from './query';
export { resolvePassThrough } from './passthrough';
export { RECIPES_VERSION, skillOf, SKILLS } from './skills';
export type { Skill } from './skills';
export { healthScan } from './health';
export type { ClosesOf, CloseStatusOfClient } from './health';
export { AgentLimitsCache, getAgentLimits, setAgentLimits } from './limits';
export { covered, coveredTransaction, createGateway, notCovered, platformFactory, requireScope } from './service';
export type { Gateway, GatewayActor, GatewayAudit, GatewayWrite } from './service';
export type { ApprovalPolicy } from './approval-policy';
export {
  createApprovals,
  effectiveApprovalPolicy,
  expireDueProposals,
  getApprovalPolicy,
  setApprovalPolicy,
} from './proposals';
export type { Approvals, Approver, ProposalPreview, ProposalRow, ProposalStatus, ProposalView } from './proposals';
