package vlanalloc

import (
	"errors"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
)

// Reason returns the VLANAllocated condition reason for the result of an
// allocation: Allocated for nil, ZoneExhausted, NamespaceNotAllowed,
// VLANConflict or VLANProviderMismatch for this package's errors, and an
// empty string for any other error (an API failure, to be retried).
func Reason(err error) string {
	switch {
	case err == nil:
		return v1alpha1.ReasonAllocated
	case errors.Is(err, ErrExhausted):
		return v1alpha1.ReasonZoneExhausted
	case errors.Is(err, ErrNamespaceNotAllowed):
		return v1alpha1.ReasonNamespaceNotAllowed
	case errors.Is(err, ErrConflict), errors.Is(err, ErrUnusableVlan), errors.Is(err, ErrTaken):
		return v1alpha1.ReasonVLANConflict
	case errors.Is(err, ErrProviderMismatch):
		return v1alpha1.ReasonVLANProviderMismatch
	}
	return ""
}

// Result returns the `result` label of cozy_proxmox_vlan_allocations_total
// for the result of an allocation: "allocated", "exhausted" or "conflict";
// an empty string for errors that are neither (no sample is recorded).
func Result(err error) string {
	switch Reason(err) {
	case v1alpha1.ReasonAllocated:
		return "allocated"
	case v1alpha1.ReasonZoneExhausted:
		return "exhausted"
	case v1alpha1.ReasonVLANConflict, v1alpha1.ReasonVLANProviderMismatch:
		return "conflict"
	}
	return ""
}
