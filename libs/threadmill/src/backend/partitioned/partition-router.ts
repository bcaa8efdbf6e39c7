import { MAX_PARTITIONS, newRunId } from '../../codec/run-id.js';

/** Crockford's base32 digits, as in run ids. */
const DIGITS = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
/** A ULID: 26 of those digits. */
const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;
/** The id of a run a schedule fired (`<schedule id>@<slot as ISO time>`, see `slotRunId`): fired in the home partition. */
const SLOT_RUN_ID = /@\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** The two digits that name partition `p` at the end of a run id. */
const CODES = Array.from({ length: MAX_PARTITIONS }, (_, p) => DIGITS[p >> 5]! + DIGITS[p & 31]!);

/** 32-bit FNV-1a of a string's UTF-16 units: cheap, stable across processes and versions. */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** The partition a ULID-shaped id names in its last two digits (0..1023). */
function codeOf(id: string): number {
  return (DIGITS.indexOf(id[24]!) << 5) | DIGITS.indexOf(id[25]!);
}

/**
 * Where the runs of a partitioned backend go, computed from a run's id alone
 * (so `getResult`, `cancel` and `waitFor` need no lookup):
 *
 * - a run id Threadmill makes is a ULID whose last two digits name its
 *   partition, chosen at enqueue: round-robin, or by a hash of the run's
 *   `partitionKey`, or of its dedupe key (every run of one key in one
 *   partition); the id stays unique (70 random bits) and sortable by time;
 * - a run a schedule fires lives in the home partition (0), with its schedule;
 * - any other id (a caller-chosen one) goes by a hash of the id, modulo the
 *   active partitions. A ULID-shaped caller id is read as coded when its
 *   code is a partition that may hold runs.
 *
 * `active` partitions take new runs; `span` (at least `active`) may hold
 * runs: those beyond `active` are retired ones still being drained, whose
 * runs are still found by their ids.
 */
export class PartitionRouter {
  /** Where the next run without a key goes: a random start, so producers do not all begin at 0. */
  private turn: number;

  /**
   * @param avoids whether round-robin should leave a partition out now (its
   *   master was found unreachable: see `PartitionHealth`); when it would
   *   leave out every active partition, none is left out
   */
  constructor(
    readonly active: number,
    public span: number = active,
    private readonly avoids: (p: number) => boolean = () => false,
  ) {
    this.turn = Math.floor(Math.random() * active);
  }

  /** A new run id for a run routed by `key` (its `partitionKey` or dedupe key), else round-robin. */
  newRunId(key?: string): string {
    let partition: number;
    if (key === undefined) {
      partition = this.turn;
      for (let i = 1; i < this.active && this.avoids(partition); i++) partition = (this.turn + i) % this.active;
      if (this.avoids(partition)) partition = this.turn;
      this.turn = (partition + 1) % this.active;
    } else partition = fnv1a(key) % this.active;
    return newRunId().slice(0, 24) + CODES[partition]!;
  }

  /** A new run id in the partition of run `id` (a flow's node added beside another: `docs/scale-out.md`, "Flows"). */
  newRunIdBeside(id: string): string {
    return newRunId().slice(0, 24) + CODES[this.partitionOf(id)]!;
  }

  /** The partition of run `id`: where it is stored (or, rarely, see `docs/scale-out.md`, where it was stored before the partition count changed). */
  partitionOf(id: string): number {
    if (id.length === 26 && ULID.test(id)) {
      const code = codeOf(id);
      if (code < this.span) return code;
    }
    if (SLOT_RUN_ID.test(id)) return 0;
    return fnv1a(id) % this.active;
  }

  /** The partition of every `key` (a partition key or dedupe key) today. */
  partitionOfKey(key: string): number {
    return fnv1a(key) % this.active;
  }
}
