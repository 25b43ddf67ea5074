"""Writes for the portal app. Each public function is a use case; views and tasks call these."""
