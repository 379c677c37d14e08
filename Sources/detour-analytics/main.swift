print("detour-analytics")
