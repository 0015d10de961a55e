"""The only app code that imports streamlit: data access, components, figure builders."""
