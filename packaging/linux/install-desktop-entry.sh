#!/usr/bin/env bash
# Add haiku-desk to the desktop's application menu (current user only; no root needed).
# Run from the unpacked folder: ./install-desktop-entry.sh   (--uninstall removes it again)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
apps="${XDG_DATA_HOME:-$HOME/.local/share}/applications"
icons="${XDG_DATA_HOME:-$HOME/.local/share}/icons/hicolor"
if [[ "${1:-}" == "--uninstall" ]]; then
    rm -f "$apps/haiku-desk.desktop" "$icons"/*/apps/haiku-desk.png "$icons/scalable/apps/haiku-desk.svg"
    echo "haiku-desk removed from the application menu"
    exit 0
fi
mkdir -p "$apps"
for size in 48 128 256; do
    mkdir -p "$icons/${size}x${size}/apps"
    cp "$here/icons/haiku-desk-$size.png" "$icons/${size}x${size}/apps/haiku-desk.png"
done
mkdir -p "$icons/scalable/apps" && cp "$here/icons/haiku-desk.svg" "$icons/scalable/apps/haiku-desk.svg"
sed "s|^Exec=haiku-desk|Exec=\"$here/haiku-desk\"|" "$here/haiku-desk.desktop" > "$apps/haiku-desk.desktop"
command -v update-desktop-database >/dev/null && update-desktop-database "$apps" || true
echo "haiku-desk added to the application menu ($apps/haiku-desk.desktop)"
