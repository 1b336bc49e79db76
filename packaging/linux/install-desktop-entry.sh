#!/usr/bin/env bash
# Add haiku-desk to the desktop's application menu (current user only; no root needed).
# Run from the unpacked folder: ./install-desktop-entry.sh   (--uninstall removes it again)
# The AppImage runs it as `haiku-desk-<version>-x86_64.AppImage --install-desktop-entry`, with
# HAIKU_DESK_EXEC set to the AppImage file (the folder it runs from is a temporary mount).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
exec_path="${HAIKU_DESK_EXEC:-$here/haiku-desk}"
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
sed "s|^Exec=haiku-desk|Exec=\"$exec_path\"|" "$here/haiku-desk.desktop" > "$apps/haiku-desk.desktop"
command -v update-desktop-database >/dev/null && update-desktop-database "$apps" || true
echo "haiku-desk added to the application menu ($apps/haiku-desk.desktop)"
