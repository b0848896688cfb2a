// Reading a conversation file the user picked (Open Session File…): refused by its size, before a
// byte of it is read into memory, when it is over the core's limit (`limits.max_conversation_bytes`
// from `engine.hostMetadata()`, the same 256 MB the CLI refuses). Pure but for the file system it
// is given: vitest runs it against real files.

/** What reading needs of a file system; `vscode.workspace.fs` is one. */
export interface SizedFileSystem<U> {
  stat(uri: U): PromiseLike<{ size: number }>;
  readFile(uri: U): PromiseLike<Uint8Array>;
}

/** A file over the limit: nothing of it was read. */
export class FileTooLarge extends Error {
  constructor(
    readonly size: number,
    readonly limit: number,
    name: string,
  ) {
    super(`${name} is ${megabytes(size)} MB: conversation files of more than ${megabytes(limit)} MB are refused`);
  }
}

const megabytes = (bytes: number) => Math.floor(bytes / (1024 * 1024));

/** The file's text, when its size is within `limit` bytes; a `FileTooLarge` otherwise, decided
 *  by `stat` alone. `name` names the file in the message. */
export async function readConversationText<U>(fs: SizedFileSystem<U>, uri: U, name: string, limit: number): Promise<string> {
  const { size } = await fs.stat(uri);
  if (size > limit) throw new FileTooLarge(size, limit, name);
  return new TextDecoder().decode(await fs.readFile(uri));
}
