/** The admin service's firmware image catalog both ways; the rules are the domain's (firmware-images.ts). */
import type {
  BeginUploadInput,
  CompleteUploadInput,
  FirmwareImage,
  ImageKeyInput,
} from "../../../domain/firmware-images.js";
import type { Page } from "../../../domain/list-queries.js";
import type { ComponentType } from "../../../domain/model.js";
import type * as admin from "../../../gen/flowadmin/v1/admin.js";
import { componentTypeFromProto, componentTypeToProto } from "./enums.js";
import { pageFromListRacks } from "./list-queries.js";
import { decoding } from "./violations.js";
import { msToDate } from "./well-known.js";

/** An unknown enum number is a wire problem; UNKNOWN (unset) goes on for the domain to refuse. */
function typeName(value: admin.BeginFirmwareImageUploadRequest["componentType"]): string {
  return decoding((v) => {
    const type = componentTypeFromProto(value, "component_type", v);
    return type === undefined || type === "UNKNOWN" ? "COMPONENT_TYPE_UNKNOWN" : type;
  });
}

export function beginUploadFromProto(req: admin.BeginFirmwareImageUploadRequest): BeginUploadInput {
  return {
    componentType: typeName(req.componentType),
    version: req.version,
    subTarget: req.subTarget,
    sizeBytes: req.sizeBytes,
  };
}

export function completeUploadFromProto(req: admin.CompleteFirmwareImageUploadRequest): CompleteUploadInput {
  return {
    uploadId: req.uploadId,
    componentType: typeName(req.componentType),
    version: req.version,
    subTarget: req.subTarget,
    sizeBytes: req.sizeBytes,
    sha256: req.sha256,
  };
}

export function deleteImageFromProto(req: admin.DeleteFirmwareImageRequest): ImageKeyInput {
  return { componentType: typeName(req.componentType), version: req.version, subTarget: req.subTarget };
}

export function listImagesFromProto(req: admin.ListFirmwareImagesRequest): {
  componentType?: ComponentType;
  page: Page;
} {
  const type = decoding((v) => componentTypeFromProto(req.componentType, "component_type", v));
  const page = pageFromListRacks({ pagination: req.pagination });
  return type === undefined || type === "UNKNOWN" ? { page } : { componentType: type, page };
}

export function imageToProto(image: FirmwareImage): admin.FirmwareImage {
  return {
    componentType: componentTypeToProto(image.componentType),
    version: image.version,
    subTarget: image.subTarget ?? "",
    objectKey: image.objectKey,
    sizeBytes: image.sizeBytes,
    sha256: image.sha256,
    uploadedBy: image.uploadedBy.name,
    uploadedByAuthenticated: image.uploadedBy.authenticated,
    uploadedAt: msToDate(image.uploadedAt),
  };
}
