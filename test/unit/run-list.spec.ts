import { describe, expect, it } from 'vitest';
import { idCell } from '../../libs/threadmill-cli/src/ui/run-list.js';

describe("the inspector's run list ids", () => {
  const id = '01a237d1-9a4c-717b-932c-7075c7df47dc';

  it('shows a whole id when its column has room for it', () => {
    expect(idCell(id, 37)).toBe(id);
  });

  it("shows the id's random tail after an ellipsis in a narrow column, leaving room for a space", () => {
    expect(idCell(id, 14)).toBe('…7075c7df47dc');
    expect(idCell(id, 14)).toHaveLength(13);
  });

  it('shows a short caller-chosen id whole', () => {
    expect(idCell('invoice-42', 14)).toBe('invoice-42');
  });
});
