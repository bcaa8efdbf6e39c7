/**
 * The binary of the newest Node release in `range` (an npm range of
 * versions: `24`, `^24.9.0`) for this platform, installed when missing.
 */
export function nodeBinary(range: string): string;
