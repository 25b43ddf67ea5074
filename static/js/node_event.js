/* The node page's "report an event" form shows only the fields its kind needs: the GPU and the
 * XID for an XID, the GPU and the counts for ECC, the NIC for NIC and link events. Without
 * JavaScript every field shows and the server says which one is missing. */
(() => {
  "use strict";
  const GPU_KINDS = ["xid", "ecc", "gpu_unresponsive", "nvlink_error"];
  const NIC_KINDS = ["nic_error", "transceiver_error", "nic_link_down"];
  const needs = (kind, field) => {
    if (field === "gpu") return GPU_KINDS.includes(kind);
    if (field === "nic") return NIC_KINDS.includes(kind);
    if (field === "xid") return kind === "xid";
    if (field === "single_bit" || field === "double_bit") return kind === "ecc";
    return true;
  };
  document.querySelectorAll("form.node-event-form").forEach((form) => {
    const kind = form.querySelector("select[name=kind]");
    if (!kind) return;
    const show = () => {
      form.querySelectorAll("[data-event-field]").forEach((wrapper) => {
        wrapper.hidden = !needs(kind.value, wrapper.dataset.eventField);
      });
    };
    kind.addEventListener("change", show);
    show();
  });
})();
