/**
 * The child task's secret items in the Tasks table, beside the task items, the `idem:` keys and
 * the command sets (command-set-store.ts); none of them carries an index attribute, so no task
 * listing ever sees them:
 *
 *   secret#<taskId>                  a plain UpgradeFirmware task's credentials, AES-GCM/KMS sealed,
 *                                    bound to "task:<taskId>"
 *
 * Why the Tasks table: these items live and die with one task, and the table already has the
 * grants every child-task function needs.
 */
import { type DynamoDBDocumentClient, GetCommand, PutCommand } from "@aws-sdk/lib-dynamodb";
import type { Cipher, TaskSecretStore } from "../../app/ports.js";
import type { FirmwareAuthentication } from "../../domain/model.js";

const secretPk = (taskId: string): string => `secret#${taskId}`;

export class DynamoTaskSecretStore implements TaskSecretStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tasksTable: string,
    private readonly cipher: Cipher | undefined,
  ) {}

  async put(taskId: string, authentication: FirmwareAuthentication): Promise<void> {
    if (this.cipher === undefined) throw new Error("firmware credentials need a cipher; none is configured");
    const blob = await this.cipher.encrypt(
      Buffer.from(JSON.stringify(authentication), "utf8"),
      `task:${taskId}`,
    );
    await this.doc.send(
      new PutCommand({ TableName: this.tasksTable, Item: { id: secretPk(taskId), secret: blob } }),
    );
  }

  async get(taskId: string): Promise<FirmwareAuthentication | undefined> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.tasksTable, Key: { id: secretPk(taskId) }, ConsistentRead: true }),
    );
    const blob = out.Item?.secret as Uint8Array | undefined;
    if (blob === undefined) return undefined;
    if (this.cipher === undefined) throw new Error("firmware credentials need a cipher; none is configured");
    const plain = await this.cipher.decrypt(blob, `task:${taskId}`);
    return JSON.parse(Buffer.from(plain).toString("utf8")) as FirmwareAuthentication;
  }
}
